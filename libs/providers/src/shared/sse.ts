/**
 * A lean reader of server-sent event bodies for the Stainless SDKs (`openai`,
 * `@anthropic-ai/sdk`): the SDK still builds and sends the request and turns HTTP statuses into
 * its errors (`.asResponse()` resolves only for a 2xx), and this reads the body. The SDKs' own
 * streams run several async generators per event (chunk splitter, line decoder, event decoder,
 * Stream iterator); here every event of one network chunk is parsed in a plain loop, so the
 * only async step per chunk is the body read (the CPU per event is in bench/src/sse.ts).
 *
 * Parsing follows the SDKs' decoders (which follow the WHATWG EventSource rules): lines end at
 * `\n`, `\r\n` or `\r`, also when split across chunks, UTF-8 is decoded across chunk
 * boundaries, a leading U+FEFF is dropped from each line, `:` lines are comments, only
 * `event` and `data` fields count, one space after the colon is dropped, data lines are
 * joined with `\n`, and a blank line dispatches the event if it has a name or a data line.
 * What each SDK then does with an event (JSON, `[DONE]`, error events) is its SseDialect.
 */

/** One event as the SDKs' decoders hand it on: `event` is null without an `event:` field. */
export interface ServerSentEvent {
  event: string | null;
  data: string;
}

const LF = 10;
const CR = 13;
const COLON = 58;
const SPACE = 32;
const BOM = 0xfeff;

/** Incremental SSE parser: bytes in, complete events out; no I/O, no promises. */
export class SseParser {
  private readonly utf8 = new TextDecoder("utf-8", { ignoreBOM: true });
  /** Text of a line not terminated yet. */
  private partial = "";
  /** The last chunk ended with `\r`: a `\n` opening the next one belongs to that line end. */
  private skipLF = false;
  private event: string | null = null;
  /** Data lines so far, joined with `\n`; undefined before the first one. */
  private data: string | undefined = undefined;

  /** Parses one chunk of the body and appends the events it completes to `out`. */
  push(bytes: Uint8Array, out: ServerSentEvent[]): void {
    this.lines(this.utf8.decode(bytes, { stream: true }), out);
  }

  /**
   * The body ended. A line without a terminator still counts; `dispatchOpenEvent` says whether
   * an event not closed by a blank line is dispatched (the `openai` SDK does, the Anthropic SDK
   * drops it).
   */
  end(out: ServerSentEvent[], dispatchOpenEvent: boolean): void {
    const rest = this.utf8.decode();
    if (rest) this.lines(rest, out);
    this.skipLF = false;
    if (this.partial) {
      const line = this.partial;
      this.partial = "";
      this.line(line, out);
    }
    if (dispatchOpenEvent) this.line("", out);
  }

  private lines(text: string, out: ServerSentEvent[]): void {
    let start = 0;
    if (this.skipLF) {
      this.skipLF = false;
      if (text.charCodeAt(0) === LF) start = 1;
    }
    const end = text.length;
    let nextLF = text.indexOf("\n", start);
    // Most servers end lines with `\n` only; `\r` is looked for once per chunk.
    let nextCR = text.indexOf("\r", start);
    while (nextLF !== -1 || nextCR !== -1) {
      const at = nextCR === -1 || (nextLF !== -1 && nextLF < nextCR) ? nextLF : nextCR;
      const piece = text.slice(start, at);
      const line = this.partial ? this.partial + piece : piece;
      this.partial = "";
      this.line(line, out);
      if (at === nextCR) {
        if (at + 1 === end) this.skipLF = true;
        else if (text.charCodeAt(at + 1) === LF) {
          start = at + 2;
          nextLF = text.indexOf("\n", start);
          nextCR = text.indexOf("\r", start);
          continue;
        }
        start = at + 1;
        nextCR = text.indexOf("\r", start);
      } else {
        start = at + 1;
        nextLF = text.indexOf("\n", start);
      }
    }
    if (start < end) this.partial += text.slice(start);
  }

  private line(raw: string, out: ServerSentEvent[]): void {
    const line = raw.charCodeAt(0) === BOM ? raw.slice(1) : raw;
    if (line.length === 0) {
      // An event needs a (non-empty) name or a data line; the SDKs skip anything else.
      if (this.event || this.data !== undefined) out.push({ event: this.event, data: this.data ?? "" });
      this.event = null;
      this.data = undefined;
      return;
    }
    const colon = line.indexOf(":");
    if (colon === 0) return;
    const field = colon === -1 ? line : line.slice(0, colon);
    if (field !== "data" && field !== "event") return;
    const value = colon === -1 ? "" : line.slice(line.charCodeAt(colon + 1) === SPACE ? colon + 2 : colon + 1);
    if (field === "event") this.event = value;
    else this.data = this.data === undefined ? value : `${this.data}\n${value}`;
  }
}

/** What a dialect makes of an event it does not pass on. */
export const SSE_SKIP: unique symbol = Symbol("sse.skip");
/** The event that ends the stream (`data: [DONE]`); what follows it is read and dropped (see sseItems). */
export const SSE_END: unique symbol = Symbol("sse.end");

/** What one SDK's `Stream` does with each event: an item, nothing, the end, or it throws the SDK's error. */
export interface SseDialect<T> {
  /** Whether an event still open when the body ends is dispatched (see SseParser.end). */
  dispatchOpenEventAtEnd: boolean;
  item(event: ServerSentEvent, headers: Headers): T | typeof SSE_SKIP | typeof SSE_END;
}

function ignore(): void {}

/** Default of `drainAfterEndMs`: a new TCP + TLS handshake to a provider costs about this much. */
export const DEFAULT_DRAIN_AFTER_END_MS = 100;

/**
 * Reads and drops what follows the end event until the body ends, for at most `ms`: true when
 * the body ended. A cancelled body makes undici close the socket when its terminating chunk has
 * not arrived yet, and the next model call then pays a new handshake; a body read to its end
 * leaves the connection in the pool (docs/benchmarks.md, "Provider connections after [DONE]").
 */
async function readToEnd(reader: ReadableStreamDefaultReader<Uint8Array>, signal: AbortSignal, ms: number): Promise<boolean> {
  if (ms <= 0) return false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  try {
    for (;;) {
      const read = await Promise.race([reader.read(), expired]);
      if (read === null || signal.aborted) return false;
      if (read.done) return true;
    }
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The items of an SSE response, one array per network chunk that completed any. Ends
 * silently when `signal` aborts (as the SDKs' streams do; the caller reports the cancel); an
 * item the dialect refuses throws after the items before it were handed on. After the end event
 * (`[DONE]`) the rest of the body is read and dropped for at most `drainAfterEndMs`, so the
 * connection can be reused; the SDKs cancel right away, which is `drainAfterEndMs: 0`. Whenever
 * the body was not read to its end (abort, an error, a consumer that stopped, a server that
 * kept the stream open past the bound) it is cancelled, which releases the connection.
 */
export async function* sseItems<T>(
  response: Response,
  signal: AbortSignal,
  dialect: SseDialect<T>,
  drainAfterEndMs: number = DEFAULT_DRAIN_AFTER_END_MS,
): AsyncGenerator<T[], void, undefined> {
  const body = response.body;
  // The SDKs' message for a body-less response (a runtime whose fetch cannot stream).
  if (!body) throw new Error("Attempted to iterate over a response with no body");
  const reader = body.getReader();
  // A pending read is ended by cancelling the reader, whatever the fetch does with its signal.
  const onAbort = (): void => void reader.cancel().catch(ignore);
  signal.addEventListener("abort", onAbort, { once: true });
  const parser = new SseParser();
  const events: ServerSentEvent[] = [];
  let drained = false;
  let failed = false;
  try {
    for (;;) {
      if (signal.aborted) return;
      let read: Awaited<ReturnType<typeof reader.read>>;
      try {
        read = await reader.read();
      } catch (err) {
        if (signal.aborted) return;
        throw err;
      }
      if (signal.aborted) return;
      if (read.done) {
        drained = true;
        parser.end(events, dialect.dispatchOpenEventAtEnd);
      } else {
        parser.push(read.value, events);
      }
      const items: T[] = [];
      for (let i = 0; i < events.length; i++) {
        let item: T | typeof SSE_SKIP | typeof SSE_END;
        try {
          item = dialect.item(events[i] as ServerSentEvent, response.headers);
        } catch (err) {
          failed = true;
          events.length = 0;
          if (items.length) yield items;
          throw err;
        }
        if (item === SSE_END) {
          events.length = 0;
          if (items.length) yield items;
          drained = await readToEnd(reader, signal, drainAfterEndMs);
          return;
        }
        if (item !== SSE_SKIP) items.push(item);
      }
      events.length = 0;
      if (items.length) yield items;
      if (drained) return;
    }
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    signal.removeEventListener("abort", onAbort);
    if (!drained) {
      const cancelled = reader.cancel().catch(ignore);
      // As the SDKs do: wait for the release unless the pass already failed or was aborted.
      if (!failed && !signal.aborted) await cancelled;
    }
  }
}
