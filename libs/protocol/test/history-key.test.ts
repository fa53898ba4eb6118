import { describe, expect, it } from "vitest";
import { historyDedupeKey, type HistoryRecord } from "../src/index.js";

const entry = (kind: HistoryRecord["kind"], body: Record<string, unknown>): HistoryRecord => ({ kind, body, interrupted: false });

describe("history dedupe key", () => {
  it("names kind, owner, attempt and place in the batch", () => {
    expect(historyDedupeKey(entry("assistant", { text: "a", modelCallId: "g1m2", attempt: 3 }), 0)).toBe("assistant:g1m2:3:0");
    expect(historyDedupeKey(entry("tool", { toolCallId: "call-7", modelCallId: "g1m2" }), 1)).toBe("tool:g1m2:0:1");
    expect(historyDedupeKey(entry("tool", { toolCallId: "call-7" }), 1)).toBe("tool:call-7:0:1");
    expect(historyDedupeKey(entry("user", { text: "hi", injectionId: "inj-1" }), 0)).toBe("user:inj-1:0:0");
    expect(historyDedupeKey(entry("user", { text: "hi", action: "user_message" }), 0)).toBe("user:user_message:0:0");
    expect(historyDedupeKey(entry("user", { text: "hi" }), 2)).toBe("user:user:0:2");
  });

  it("is the same for a re-append of the same entry and differs between attempts", () => {
    const a = entry("assistant", { text: "x", modelCallId: "g1m1", attempt: 1 });
    expect(historyDedupeKey(a, 0)).toBe(historyDedupeKey({ ...a, interrupted: true }, 0));
    expect(historyDedupeKey(a, 0)).not.toBe(historyDedupeKey(entry("assistant", { text: "x", modelCallId: "g1m1", attempt: 2 }), 0));
  });
});
