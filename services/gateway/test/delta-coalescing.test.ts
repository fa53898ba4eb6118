// Delta coalescing (docs/benchmarks.md "Delta coalescing"): deltas after a pass's first one merge
// into one frame per window, losslessly, without reordering, and what is stored in the output
// stream is byte for byte what the reader got. On both buses; window 0 turns it off.
import { toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorClient, runRequestMessage } from "@byok/testing";
import { AgentServerMessageSchema, type AgentServerMessage } from "@byok/wire";
import { startHarness, TEST_MODEL, type Harness, type TestBus } from "./harness.js";

const DELTAS = Array.from({ length: 40 }, (_, i) => `w${i} `);

function updates(ms: AgentServerMessage[], kind: "textDelta" | "thinkingDelta"): string[] {
  const out: string[] = [];
  for (const m of ms) if (m.message.case === "interactionUpdate" && m.message.value.message.case === kind) out.push(m.message.value.message.value.text);
  return out;
}

describe.each<TestBus>(["memory", "redis"])("delta coalescing (%s bus)", (bus) => {
  let h: Harness;
  let off: Harness;
  beforeAll(async () => {
    h = await startHarness({ GATEWAY_DELTA_COALESCE_MS: "20", GATEWAY_KV_ACK_TIMEOUT_MS: "2000", GATEWAY_NOT_FOUND_WAIT_MS: "30000" }, undefined, bus);
    off = await startHarness({ GATEWAY_DELTA_COALESCE_MS: "0", GATEWAY_KV_ACK_TIMEOUT_MS: "2000", GATEWAY_NOT_FOUND_WAIT_MS: "30000" }, undefined, bus);
  }, 240_000);
  afterAll(async () => Promise.all([h?.close(), off?.close()]));

  it("merges later deltas into fewer frames, keeps the first one alone, loses and reorders nothing", async () => {
    h.sim.enqueue({ reasoning: ["think ", "ing ", "hard"], text: DELTAS, chunkDelayMs: 2, usage: { inputTokens: 1, outputTokens: 40 } });
    const requestId = `coalesce-${bus}`;
    const r = await createCursorClient({ baseUrl: h.gw.url }).runTurn({ requestId, message: runRequestMessage({ text: "go", conversationId: `c-${requestId}`, modelId: TEST_MODEL }) });
    expect(r.end).toEqual({ ok: true });
    const text = updates(r.messages, "textDelta");
    expect(text.join("")).toBe(DELTAS.join(""));
    expect(updates(r.messages, "thinkingDelta").join("")).toBe("think ing hard");
    // Frames hold whole deltas (the first frame is what arrived in the first tick) and fewer
    // frames than deltas went out.
    expect(DELTAS.some((_, k) => text[0] === DELTAS.slice(0, k + 1).join(""))).toBe(true);
    expect(text.length).toBeLessThan(DELTAS.length);
    // Thinking stays before its completion, and the completion before the text.
    const kinds = r.messages.flatMap((m) => (m.message.case === "interactionUpdate" ? [m.message.value.message.case] : []));
    expect(kinds.lastIndexOf("thinkingDelta")).toBeLessThan(kinds.indexOf("thinkingCompleted"));
    expect(kinds.indexOf("thinkingCompleted")).toBeLessThan(kinds.indexOf("textDelta"));
    // The stored stream is what the reader got, frame for frame and byte for byte.
    const stored = await h.gw.bus.readOutput({ tenantId: h.config.defaultTenant, requestId }, 1, 0, 10_000);
    expect(stored.entries.map((e) => Buffer.from(e.frame).toString("hex"))).toEqual(r.messages.map((m) => Buffer.from(toBinary(AgentServerMessageSchema, m)).toString("hex")));
  });

  it("with the window at 0 every provider delta is its own frame", async () => {
    off.sim.enqueue({ text: DELTAS, chunkDelayMs: 2, usage: { inputTokens: 1, outputTokens: 40 } });
    const r = await createCursorClient({ baseUrl: off.gw.url }).runTurn({ requestId: `no-coalesce-${bus}`, message: runRequestMessage({ text: "go", conversationId: `c-off-${bus}`, modelId: TEST_MODEL }) });
    expect(r.end).toEqual({ ok: true });
    expect(updates(r.messages, "textDelta")).toEqual(DELTAS);
  });
});
