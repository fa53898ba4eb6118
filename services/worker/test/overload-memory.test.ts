// Memory bounds of a real ingress process (its /metrics: V8 heap used + external memory, where
// Buffers live), as bound checks, not speed assertions:
// - slow readers: RunSSE readers that stop reading while replaying a turn of 1 MiB frames each
//   park their stream holding at most one small read batch; once they read again every frame
//   arrives whole and the stream ends {};
// - idle streams (OVERLOAD_IDLE_STREAMS, default 10000): RunSSE streams waiting for a request,
//   each costing a bounded amount of heap, while a turn on the same process still streams.
import { request, type IncomingMessage } from "node:http";
import { randomUUID } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createCursorClient, createFrameDecoder, cursorHeaders, metricSum, runRequestMessage, scrapeMetrics, type StreamItem,
} from "@byok/testing";
import { BidiRequestIdSchema, encodeEnvelope } from "@byok/wire";
import { decodeFrames, xrangeFrames } from "./frames.js";
import { SERVICE_START_MS, startTestCluster, TEST_MODEL, waitFor, type TestCluster } from "./process-harness.js";

const IDLE_STREAMS = Number(process.env.OVERLOAD_IDLE_STREAMS ?? "10000");
const MIB = 1024 * 1024;
const FRAME_BYTES = MIB;
const FRAMES = 24;
const SLOW_READERS = 12;

/** A RunSSE reader over node:http whose response is paused (not read) until `drain()`. */
function slowReader(baseUrl: string, authToken: string, requestId: string): Promise<{ res: IncomingMessage; drain(): Promise<StreamItem[]> }> {
  const body = encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })));
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}/agent.v1.AgentService/RunSSE`, {
      method: "POST",
      headers: { ...cursorHeaders(requestId, { authToken }), "content-type": "application/connect+proto", "content-length": String(body.byteLength) },
    });
    req.on("error", reject);
    req.on("response", (res) => {
      res.pause();
      resolve({
        res,
        drain: async () => {
          const decoder = createFrameDecoder(res.headers["connect-content-encoding"] as string | undefined);
          const items: StreamItem[] = [];
          for await (const chunk of res) items.push(...decoder.push(chunk as Buffer));
          decoder.finish();
          return items;
        },
      });
    });
    req.end(body);
  });
}

describe("overload: memory of a real ingress stays bounded", () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await startTestCluster({
      ingress: 1,
      workers: 1,
      startMs: 2 * SERVICE_START_MS,
      env: {
        // Idle streams wait for their request (no not-found end, no heartbeats during the test).
        GATEWAY_NOT_FOUND_WAIT_MS: "600000",
        GATEWAY_HEARTBEAT_MS: "60000",
        GATEWAY_FINISHED_RETENTION_MS: "600000",
        // A worker streaming 1 MiB deltas on a loaded machine must not be mistaken for a dead one.
        GATEWAY_LOCK_DURATION_MS: "30000",
        GATEWAY_STALLED_INTERVAL_MS: "5000",
      },
    });
  }, 3 * SERVICE_START_MS);
  afterAll(async () => {
    await c?.close();
  });

  /** Heap used + external memory (Buffers) of the ingress, in bytes. */
  const memory = async () => {
    const m = await scrapeMetrics(c.ingress[0]!.url);
    return metricSum(m, "byok_nodejs_heap_size_used_bytes") + metricSum(m, "byok_nodejs_external_memory_bytes");
  };
  const openStreams = async () => metricSum(await scrapeMetrics(c.ingress[0]!.url), "byok_run_sse_open");

  it(`${SLOW_READERS} readers that stop reading a replay of ${FRAMES} frames of 1 MiB hold a bounded amount, then get every frame`, async () => {
    const client = createCursorClient({ baseUrl: c.ingress[0]!.url, authToken: c.authToken });
    const chunks = Array.from({ length: FRAMES }, (_, k) => `${String(k).padStart(4, "0")}${"x".repeat(FRAME_BYTES - 4)}`);
    c.sim.enqueue({ text: chunks, chunkDelayMs: 50 });
    const requestId = `big-frames-${randomUUID()}`;
    const turn = await client.runTurn({ requestId, message: runRequestMessage({ text: "big", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }) });
    if (!turn.end?.ok) for (const p of [...c.ingress, ...c.workers]) console.log(p.lines.filter((l) => /"level":(40|50|60)/.test(l)).slice(-10).join("\n").slice(0, 4000));
    expect(turn.end).toEqual({ ok: true });
    expect(turn.textDeltas).toBe(chunks.join(""));
    const stored = decodeFrames(await xrangeFrames(c.redis, c.keyPrefix, { tenantId: "default", requestId }, 1));

    await new Promise((r) => setTimeout(r, 2_000));
    const before = await memory();
    const readers = await Promise.all(Array.from({ length: SLOW_READERS }, () => slowReader(c.ingress[0]!.url, c.authToken, requestId)));
    await waitFor(async () => (await openStreams()) >= SLOW_READERS, 30_000, "slow readers open");
    // Let every stream fill its socket and park on backpressure.
    await new Promise((r) => setTimeout(r, 3_000));
    let peak = 0;
    for (let i = 0; i < 3; i++) {
      peak = Math.max(peak, await memory());
      await new Promise((r) => setTimeout(r, 500));
    }
    const growthMiB = (peak - before) / MIB;
    console.log(`OVERLOAD slow_readers=${SLOW_READERS} frames=${FRAMES} frame_bytes=${FRAME_BYTES} memory_growth_mib=${growthMiB.toFixed(1)} replay_mib=${((SLOW_READERS * FRAMES * FRAME_BYTES) / MIB).toFixed(0)}`);
    try {
      // Each parked stream may hold one read batch (≤ 4 frames here) and the envelope being
      // written (measured ≈ 7 MiB per stream); holding the whole replay would be 24 MiB each.
      expect(growthMiB).toBeLessThan(SLOW_READERS * 14);
      // Reading again, a slow reader gets every frame, whole and in order, and the end {}.
      for (const r of readers.slice(0, 2)) {
        const items = await r.drain();
        expect(items.filter((x) => x.kind === "message")).toHaveLength(stored.length);
        expect(items.at(-1)).toEqual({ kind: "end", end: { ok: true } });
      }
    } finally {
      for (const r of readers) r.res.destroy();
    }
  }, 300_000);

  it(`${IDLE_STREAMS} idle streams cost a bounded amount of heap each, and the replica still streams a turn`, async () => {
    const client = createCursorClient({ baseUrl: c.ingress[0]!.url, authToken: c.authToken });
    await waitFor(async () => (await openStreams()) === 0, 30_000, "no streams open");
    const before = await memory();
    const abort = new AbortController();
    const opened: Promise<unknown>[] = [];
    for (let i = 0; i < IDLE_STREAMS; i++) {
      opened.push(client.runSse(`idle-${i}-${randomUUID()}`, { signal: abort.signal }).catch(() => undefined));
      // Bounded in flight: at most 500 opening at a time.
      if (i % 500 === 499) await waitFor(async () => (await openStreams()) >= i + 1 - 50, 60_000, "idle streams opening");
    }
    await waitFor(async () => (await openStreams()) >= IDLE_STREAMS, 120_000, `${IDLE_STREAMS} idle streams open`);
    await new Promise((r) => setTimeout(r, 2_000));
    const during = await memory();
    const perStreamKiB = (during - before) / IDLE_STREAMS / 1024;
    console.log(`OVERLOAD idle_streams=${IDLE_STREAMS} memory_growth_mib=${((during - before) / MIB).toFixed(1)} per_stream_kib=${perStreamKiB.toFixed(1)}`);
    // Generous: the benchmark measures 25–45 KiB of heap per idle stream (docs/benchmarks.md).
    expect(perStreamKiB).toBeLessThan(96);

    c.sim.enqueue({ text: "still streaming" });
    const requestId = `beside-idle-${randomUUID()}`;
    const turn = await client.runTurn({ requestId, message: runRequestMessage({ text: "hi", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }) });
    expect(turn.end).toEqual({ ok: true });
    expect(turn.textDeltas).toBe("still streaming");

    abort.abort();
    await Promise.all(opened);
    await waitFor(async () => (await openStreams()) === 0, 60_000, "idle streams closed");
  }, 300_000);
});
