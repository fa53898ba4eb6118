// A RunSSE whose generation expires under it (docs/protocol.md "Stream behaviour"): an ended
// run's output is kept GATEWAY_FINISHED_RETENTION_MS, then dropped. A reader that found the
// generation but reads it after that, or whose request's keys vanish while it follows a run
// (Redis eviction), ends `not_found` saying the output expired, instead of sending heartbeats
// for ever (found by npm run bench:scale, 1000 turns: a stream accepted 34 s late hung).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestKeys } from "@byok/bus";
import { createCursorClient, runRequestMessage } from "@byok/testing";
import { deleteKeys, startHarness, TEST_MODEL, type Harness, type TestBus } from "./harness.js";

describe.each<TestBus>(["memory", "redis"])("a RunSSE whose generation expires (%s bus)", (bus) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(
      {
        GATEWAY_FINISHED_RETENTION_MS: "300",
        // Longer than the retention: a reconnect waiting for a newer generation outlives the ended one.
        GATEWAY_NEW_GENERATION_WAIT_MS: "1500",
        GATEWAY_HEARTBEAT_MS: "200",
        GATEWAY_KV_ACK_TIMEOUT_MS: "2000",
      },
      undefined,
      bus,
    );
  }, 120_000);
  afterAll(async () => h?.close());

  it("ends not_found when the ended generation it waited on expires, not with heartbeats for ever", async () => {
    h.sim.enqueue({ text: "done", usage: { inputTokens: 1, outputTokens: 1 } });
    const client = createCursorClient({ baseUrl: h.gw.url });
    const requestId = `expiring-${bus}`;
    const turn = await client.runTurn({ requestId, message: runRequestMessage({ text: "hi", conversationId: `c-${requestId}`, modelId: TEST_MODEL }) });
    expect(turn.end).toEqual({ ok: true });
    // Right after the end: the generation is there (ended), the stream waits for a newer one, and the old one expires meanwhile.
    const late = await client.collect(requestId);
    expect(late.end).toMatchObject({ ok: false, code: "not_found" });
    expect(late.end?.ok === false && late.end.message).toMatch(/expired/);
    expect(late.textDeltas).toBe("");
  });

  it.runIf(bus === "redis")("ends not_found when the request's keys vanish while it follows a live run", async () => {
    h.sim.enqueue({ text: ["one ", "two ", "three ", "four ", "five ", "six "], chunkDelayMs: 400, usage: { inputTokens: 1, outputTokens: 6 } });
    const client = createCursorClient({ baseUrl: h.gw.url });
    const requestId = "evicted-redis";
    const seen: string[] = [];
    const turn = client.runTurn({
      requestId,
      message: runRequestMessage({ text: "hi", conversationId: `c-${requestId}`, modelId: TEST_MODEL }),
      onMessage: async (m) => {
        if (m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta") {
          seen.push(m.message.value.message.value.text);
          // Evicted (as under maxmemory) while the reader follows the run.
          if (seen.length === 1) await deleteKeys(requestKeys(h.keyPrefix!, { tenantId: "default", requestId }).base);
        }
      },
    });
    const r = await turn;
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(r.end).toMatchObject({ ok: false, code: "not_found" });
  });
});
