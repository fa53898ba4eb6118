import { describe, expect, it } from "vitest";
import { coalesceDeltas, frames, isCoalescableDelta } from "../src/index.js";

const kinds = (fs: ReturnType<typeof coalesceDeltas>) =>
  fs.map((f) => {
    if (f.message.case !== "interactionUpdate") return String(f.message.case);
    const u = f.message.value.message;
    if (u.case === "textDelta") return `${u.value.isServerNotice ? "notice" : "text"}:${u.value.text}`;
    if (u.case === "thinkingDelta") return `thinking:${u.value.text}`;
    return String(u.case);
  });

describe("coalesceDeltas", () => {
  it("merges consecutive text deltas and consecutive thinking deltas losslessly", () => {
    const out = coalesceDeltas([frames.thinkingDelta("a"), frames.thinkingDelta("b"), frames.thinkingCompleted(5), frames.textDelta("Hel"), frames.textDelta("lo"), frames.textDelta(" !")]);
    expect(kinds(out)).toEqual(["thinking:ab", "thinkingCompleted", "text:Hello !"]);
  });

  it("never merges across another frame kind or a server notice, so nothing is reordered", () => {
    const out = coalesceDeltas([
      frames.textDelta("a"), frames.heartbeat(), frames.textDelta("b"), frames.textDelta("n1", true), frames.textDelta("n2", true), frames.textDelta("c"), frames.thinkingDelta("t"), frames.textDelta("d"),
    ]);
    expect(kinds(out)).toEqual(["text:a", "heartbeat", "text:b", "notice:n1n2", "text:c", "thinking:t", "text:d"]);
  });

  it("keeps a lone delta as the same frame and an empty list empty", () => {
    const f = frames.textDelta("x");
    expect(coalesceDeltas([f])[0]).toBe(f);
    expect(coalesceDeltas([])).toEqual([]);
  });

  it("only model text and thinking deltas may be held back", () => {
    expect(isCoalescableDelta(frames.textDelta("x"))).toBe(true);
    expect(isCoalescableDelta(frames.thinkingDelta("x"))).toBe(true);
    expect(isCoalescableDelta(frames.textDelta("x", true))).toBe(false);
    expect(isCoalescableDelta(frames.heartbeat())).toBe(false);
    expect(isCoalescableDelta(frames.partialToolCall("c", "m", "{"))).toBe(false);
  });
});
