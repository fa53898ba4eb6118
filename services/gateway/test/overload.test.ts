// Overload at the edge: past GATEWAY_MAX_RUN_SSE_STREAMS a new RunSSE ends at once with a
// retryable resource_exhausted (never a hang), and a slot freed by a closing stream is reused;
// byok_run_sse_open (the ingress HPA's metric) counts the open streams up and down.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorClient, heartbeatMessage, metricDelta, metricSum, runRequestMessage, scrapeMetrics, waitFor, type CursorClient } from "@byok/testing";
import { startHarness, TEST_MODEL, type Harness } from "./harness.js";

describe("overload: the RunSSE stream limit", () => {
  let h: Harness;
  let client: CursorClient;
  beforeAll(async () => {
    // Idle streams: RunSSE for requests that never appear wait (up to a minute) for their run.
    h = await startHarness({ GATEWAY_MAX_RUN_SSE_STREAMS: "3", GATEWAY_NOT_FOUND_WAIT_MS: "60000" });
    client = createCursorClient({ baseUrl: h.gw.url });
  });
  afterAll(async () => h.close());

  it("refuses the stream past the limit at once with a retry hint, and admits again once one closes", async () => {
    const before = await scrapeMetrics(h.gw.url);
    expect(metricSum(before, "byok_run_sse_open")).toBe(0);
    const abort = new AbortController();
    const idle = await Promise.all(Array.from({ length: 3 }, () => client.runSse(`idle-${randomUUID()}`, { signal: abort.signal })));
    expect(idle.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(metricSum(await scrapeMetrics(h.gw.url), "byok_run_sse_open")).toBe(3);

    const refused = await client.collect(`over-${randomUUID()}`);
    expect(refused.end).toMatchObject({ ok: false, code: "resource_exhausted" });
    if (refused.end && !refused.end.ok) {
      expect(refused.end.message).toMatch(/already serves 3 RunSSE streams \(GATEWAY_MAX_RUN_SSE_STREAMS\); retry shortly/);
      expect(refused.end.errorDetails[0]?.details?.isRetryable).toBe(true);
    }
    // BidiAppend is not a stream: it is still served.
    expect((await client.append(`append-${randomUUID()}`, 1, heartbeatMessage())).ok).toBe(true);

    abort.abort();
    // The server sees the sockets close: the gauge falls back, each stream ended as client_gone.
    const closed = await waitFor(async () => {
      const now = await scrapeMetrics(h.gw.url);
      return metricSum(now, "byok_run_sse_open") === 0 ? now : undefined;
    }, 10_000, "the idle streams closed");
    expect(metricDelta(before, closed)("byok_run_sse_streams_total", { end_code: "client_gone" })).toBe(3);
    // The released slots are reused: a whole turn streams again.
    const turn = await (async () => {
      for (;;) {
        // Each attempt's run calls the model (the append starts it), so each gets the same script.
        h.sim.enqueue({ text: "after the limit" });
        const t = await client.runTurn({ requestId: `after-${randomUUID()}`, message: runRequestMessage({ text: "hi", conversationId: `c-${randomUUID()}`, modelId: TEST_MODEL }) });
        // The aborted streams are released when the server sees the sockets close.
        if (t.end && !t.end.ok && t.end.code === "resource_exhausted") continue;
        return t;
      }
    })();
    expect(turn.end).toEqual({ ok: true });
    expect(turn.textDeltas).toBe("after the limit");
  });
});
