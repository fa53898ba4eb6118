// Overload of the embedded gateway (docs/operations.md "Sizing"): at most
// GATEWAY_WORKER_CONCURRENCY runs execute at once in the process, later ones wait in order, and
// past GATEWAY_MAX_WAITING_RUNS waiting a new run is refused at once — BidiAppend HTTP 429
// `resource_exhausted`, retryable, `retry-after`, and its waiting RunSSE reader ends with the
// same status — as in distributed mode (services/worker/test/overload-admission.test.ts).
import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIDI_APPEND_PATH, collectItems, createCursorClient, cursorHeaders, encodeAppendBody, metricSum, runRequestMessage, scrapeMetrics, streamingTurn, waitFor } from "@byok/testing";
import { ErrorDetailsSchema } from "@byok/wire";
import { startHarness, TEST_MODEL, type Harness } from "./harness.js";

describe("embedded gateway: runs past its concurrency", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ GATEWAY_WORKER_CONCURRENCY: "1", GATEWAY_MAX_WAITING_RUNS: "1", GATEWAY_KV_ACK_TIMEOUT_MS: "2000" });
  });
  afterAll(async () => h?.close());

  const turnMessage = (tag: string) => runRequestMessage({ text: `overload ${tag}`, conversationId: `conv-${tag}-${randomUUID()}`, modelId: TEST_MODEL });
  const asked = (tag: string) => h.sim.requests.some((r) => r.rawBody.includes(`overload ${tag}`));

  it("runs one at a time, queues the next, refuses past the waiting limit at once, and admits again after", async () => {
    const client = createCursorClient({ baseUrl: h.gw.url });
    h.sim.enqueue({ text: Array.from({ length: 30 }, (_, i) => `a${i} `), chunkDelayMs: 50 }, { text: "b done" });
    const a = await streamingTurn(client, { requestId: `busy-${randomUUID()}`, message: turnMessage("a") });
    const b = client.runTurn({ requestId: `waiting-${randomUUID()}`, message: turnMessage("b") });
    const depth = async (state: string) => metricSum(await scrapeMetrics(h.gw.url), "byok_queue_depth", { state });
    await waitFor(async () => (await depth("waiting")) === 1, 10_000, "run B waiting for the slot");
    expect(await depth("active")).toBe(1);

    // Run C: its reader is open when the append is refused (run B holds the one waiting place).
    const requestId = `refused-${randomUUID()}`;
    const reader = await client.runSse(requestId);
    const { body, headers } = encodeAppendBody(requestId, 1, turnMessage("c"));
    const res = await fetch(h.gw.url + BIDI_APPEND_PATH, { method: "POST", headers: { ...cursorHeaders(requestId, {}), ...headers }, body });
    const refusal = JSON.parse(await res.text()) as { code: string; message: string; details?: { type: string; value: string }[] };
    expect(a.ended()).toBe(false);
    expect(asked("b")).toBe(false);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(refusal.code).toBe("resource_exhausted");
    expect(refusal.message).toMatch(/GATEWAY_MAX_WAITING_RUNS is 1/);
    const detail = refusal.details?.find((d) => d.type === "aiserver.v1.ErrorDetails");
    expect(fromBinary(ErrorDetailsSchema, Buffer.from(detail!.value, "base64")).details?.isRetryable).toBe(true);
    const read = await collectItems(reader.frames);
    expect(read.end).toMatchObject({ ok: false, code: "resource_exhausted" });

    // A finishes, then B (which waited for the slot) runs; C never reached the provider.
    expect((await a.result).end).toEqual({ ok: true });
    const rb = await b;
    expect(rb.end).toEqual({ ok: true });
    expect(rb.textDeltas).toBe("b done");
    expect(asked("c")).toBe(false);
    h.sim.enqueue({ text: "admitted again" });
    const after = await client.runTurn({ requestId: `after-${randomUUID()}`, message: turnMessage("d") });
    expect(after.end).toEqual({ ok: true });
    expect(after.textDeltas).toBe("admitted again");
    expect(await depth("waiting")).toBe(0);
  }, 60_000);
});
