// Overload past the worker concurrency (real processes): one worker with concurrency 1 and
// GATEWAY_MAX_WAITING_RUNS=1. With one run streaming and one waiting for the worker, a third run
// is refused at once — BidiAppend HTTP 429 `resource_exhausted` with a retryable ErrorDetails and
// `retry-after`, and its RunSSE reader ends with the same status — never queued and never a
// hang (counted as byok_bidi_appends_total{outcome="overloaded"}); once the worker is free again
// a new run is admitted and completes.
import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromBinary } from "@bufbuild/protobuf";
import { BIDI_APPEND_PATH, collectItems, createCursorClient, cursorHeaders, encodeAppendBody, metricDelta, runRequestMessage, scrapeMetrics, streamingTurn } from "@byok/testing";
import { ErrorDetailsSchema } from "@byok/wire";
import { SERVICE_START_MS, startTestCluster, TEST_MODEL, waitFor, type TestCluster } from "./process-harness.js";

describe("overload: runs past the worker concurrency (real processes)", () => {
  let c: TestCluster;
  let queue: Queue;
  beforeAll(async () => {
    c = await startTestCluster({ ingress: 1, workers: 1, env: { GATEWAY_WORKER_CONCURRENCY: "1", GATEWAY_MAX_WAITING_RUNS: "1" } });
    queue = new Queue("runs", { connection: c.redis.duplicate(), prefix: c.queuePrefix });
  }, 2 * SERVICE_START_MS);
  afterAll(async () => {
    await queue?.close();
    await c?.close();
  });

  const turnMessage = (requestId: string) => runRequestMessage({ text: `overload ${requestId}`, conversationId: `conv-${requestId}`, modelId: TEST_MODEL });

  it("refuses a new run at once with resource_exhausted and a retry hint while the worker is busy and one run waits, and admits again after", async () => {
    const client = createCursorClient({ baseUrl: c.ingress[0]!.url, authToken: c.authToken });
    // Run A holds the worker's only slot while it streams; run B waits for it.
    c.sim.enqueue({ text: Array.from({ length: 80 }, (_, i) => `a${i} `), chunkDelayMs: 100 }, { text: "b done" });
    const a = await streamingTurn(client, { requestId: `busy-${randomUUID()}`, message: turnMessage("a") });
    const b = client.runTurn({ requestId: `waiting-${randomUUID()}`, message: turnMessage("b") });
    await waitFor(async () => (await queue.getJobCountByTypes("waiting", "prioritized")) === 1, 10_000, "run B waiting for the worker");

    // Run C: its reader is already open when the append is refused.
    const requestId = `refused-${randomUUID()}`;
    const reader = await client.runSse(requestId);
    const before = await scrapeMetrics(c.ingress[0]!.url);
    const { body, headers } = encodeAppendBody(requestId, 1, turnMessage("c"));
    const res = await fetch(c.ingress[0]!.url + BIDI_APPEND_PATH, {
      method: "POST",
      headers: { ...cursorHeaders(requestId, { authToken: c.authToken }), ...headers },
      body,
    });
    const refusal = JSON.parse(await res.text()) as { code: string; message: string; details?: { type: string; value: string }[] };
    // At once: refused while run A still holds the worker (it did not wait for a slot).
    expect(a.ended()).toBe(false);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(refusal.code).toBe("resource_exhausted");
    expect(refusal.message).toMatch(/workers are all busy \(1 runs already wait for one; GATEWAY_MAX_WAITING_RUNS is 1\); retry in a few seconds/);
    const detail = refusal.details?.find((d) => d.type === "aiserver.v1.ErrorDetails");
    expect(detail).toBeDefined();
    expect(fromBinary(ErrorDetailsSchema, Buffer.from(detail!.value, "base64")).details?.isRetryable).toBe(true);
    expect(metricDelta(before, await scrapeMetrics(c.ingress[0]!.url))("byok_bidi_appends_total", { outcome: "overloaded" })).toBe(1);
    const read = await collectItems(reader.frames);
    // The waiting reader got the refusal as its end, also before run A was done.
    expect(a.ended()).toBe(false);
    expect(read.end).toMatchObject({ ok: false, code: "resource_exhausted" });
    if (read.end && !read.end.ok) expect(read.end.errorDetails[0]?.details?.isRetryable).toBe(true);
    // Nothing was queued for it; the provider saw A and (later) B only.
    expect(await queue.getJobCountByTypes("waiting", "prioritized")).toBe(1);

    expect((await a.result).end).toEqual({ ok: true });
    expect((await b).end).toEqual({ ok: true });
    // The worker is free and nothing waits: a new run is admitted and completes.
    c.sim.enqueue({ text: "admitted again" });
    const after = await client.runTurn({ requestId: `after-${randomUUID()}`, message: turnMessage("d") });
    expect(after.end).toEqual({ ok: true });
    expect(after.textDeltas).toBe("admitted again");
    expect(c.sim.requests.some((r) => r.rawBody.includes("overload c"))).toBe(false);
  }, 120_000);
});
