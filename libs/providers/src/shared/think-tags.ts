/** A piece of streamed content, classified as visible text or reasoning. */
export interface ThinkSegment {
  reasoning: boolean;
  text: string;
}

const OPEN = "<think>";
const CLOSE = "</think>";

/**
 * Splits streamed content into text and reasoning by `<think>…</think>` tags (DeepSeek-R1,
 * QwQ and other open models served behind OpenAI-compatible endpoints). Tags may be split
 * across chunks: a trailing fragment that could start a tag is held back until the next
 * chunk (or `flush`). Tags themselves are dropped; text is never reordered.
 */
export class ThinkTagSplitter {
  private inThink = false;
  private held = "";

  push(chunk: string): ThinkSegment[] {
    let buf = this.held + chunk;
    this.held = "";
    const out: ThinkSegment[] = [];
    for (;;) {
      const tag = this.inThink ? CLOSE : OPEN;
      const at = buf.indexOf(tag);
      if (at >= 0) {
        if (at > 0) out.push({ reasoning: this.inThink, text: buf.slice(0, at) });
        buf = buf.slice(at + tag.length);
        this.inThink = !this.inThink;
        continue;
      }
      const keep = partialTagSuffix(buf, tag);
      const emit = buf.slice(0, buf.length - keep);
      if (emit) out.push({ reasoning: this.inThink, text: emit });
      this.held = buf.slice(buf.length - keep);
      return out;
    }
  }

  /** Releases any held fragment (the stream ended; it was not a tag after all). */
  flush(): ThinkSegment[] {
    const rest = this.held;
    this.held = "";
    return rest ? [{ reasoning: this.inThink, text: rest }] : [];
  }
}

/** Length of the longest suffix of `s` that is a proper prefix of `tag`. */
function partialTagSuffix(s: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, s.length); n > 0; n--) {
    if (s.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}
