// Memory bounds of a real ingress process, measured on its /metrics (V8 heap used + external
// memory, where Buffers live), as bounds derived from the configuration, not speed assertions:
// - slow readers: RunSSE readers that stop reading a replay of 1 MiB frames park their streams
//   on TCP backpressure, each holding at most one read batch (GATEWAY_READ_BATCH_BYTES) and the
//   frame being written — far less than the replay; read again, every frame arrives whole and
//   the stream ends {};
// - idle streams (OVERLOAD_IDLE_STREAMS: 1000 here, 10000 with `npm run memory`): RunSSE streams
//   waiting for a request cost a bounded amount each, and the replica still streams a turn.
// docs/reliability.md "Overload and outages" has the figures.
import { request, type ClientRequest, type IncomingMessage } from "node:http";
import { randomUUID } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createCursorClient, createFrameDecoder, cursorHeaders, holdIdleRunSse, metricSum, parsePrometheus, runRequestMessage, type MetricSample, type StreamItem,
} from "@byok/testing";
import { BidiRequestIdSchema, encodeEnvelope } from "@byok/wire";
import { decodeFrames, xrangeFrames } from "./frames.js";
import { SERVICE_START_MS, startTestCluster, TEST_MODEL, waitFor, type TestCluster } from "./process-harness.js";

const MIB = 1024 * 1024;
const IDLE_STREAMS = Number(process.env.OVERLOAD_IDLE_STREAMS ?? "1000");
const FRAME_BYTES = MIB;
const FRAMES = 16;
const SLOW_READERS = 12;
/** GATEWAY_READ_BATCH_BYTES of the ingress (default 4 MiB): two 1 MiB frames per batch. */
const READ_BATCH_BYTES = 2 * MIB;
/**
 * What a parked stream may hold: one read batch and the envelope being written, twice over for
 * copies the garbage collector has not reclaimed yet at the scrape.
 */
const PARKED_STREAM_BOUND = 2 * (READ_BATCH_BYTES + FRAME_BYTES);
/** Allowance for everything else that moves between two scrapes (sockets, parsers, metrics). */
const BASE_ALLOWANCE = 32 * MIB;
/**
 * An idle stream (waiting for its request): the benchmark measures 25–45 KiB of heap each
 * (docs/benchmarks.md); the bound allows for the connection's socket and parser and for the
 * garbage of opening the streams (1000 streams measured 27–65 KiB each).
 */
const IDLE_STREAM_BOUND = 96 * 1024;

/** A RunSSE reader over node:http whose response is paused (not read) until `drain()`. */
function slowReader(baseUrl: string, authToken: string, requestId: string): Promise<{ res: IncomingMessage; drain(): Promise<StreamItem[]> }> {
  const body = encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })));
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}/agent.v1.AgentService/RunSSE`, {
      method: "POST",
      agent: false,
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
      env: {
        GATEWAY_READ_BATCH_BYTES: String(READ_BATCH_BYTES),
        // Every 1 MiB provider delta its own frame.
        GATEWAY_DELTA_COALESCE_MS: "0",
        // Idle streams wait for their request (no not-found end, no heartbeats during the test).
        GATEWAY_NOT_FOUND_WAIT_MS: "600000",
        GATEWAY_HEARTBEAT_MS: "60000",
        GATEWAY_FINISHED_RETENTION_MS: "600000",
        // A worker streaming 1 MiB deltas on a loaded machine must not be mistaken for a dead one.
        GATEWAY_LOCK_DURATION_MS: "30000",
        GATEWAY_STALLED_INTERVAL_MS: "5000",
      },
    });
  }, 2 * SERVICE_START_MS);
  afterAll(async () => {
    await c?.close();
  });

  /** /metrics on a connection of its own each time (no keep-alive reuse racing the server's idle timeout on a loaded machine). */
  const metrics = () =>
    new Promise<MetricSample[]>((resolve, reject) => {
      const req = request(`${c.ingress[0]!.url}/metrics`, { agent: false }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () => (res.statusCode === 200 ? resolve(parsePrometheus(text)) : reject(new Error(`/metrics answered ${res.statusCode}`))));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end();
    });
  /** Heap used + external memory (Buffers) of the ingress, in bytes. */
  const memory = async () => {
    const m = await metrics();
    return metricSum(m, "byok_nodejs_heap_size_used_bytes") + metricSum(m, "byok_nodejs_external_memory_bytes");
  };
  const openStreams = async () => metricSum(await metrics(), "byok_run_sse_open");

  it(`${IDLE_STREAMS} idle streams cost a bounded amount each, and the replica still streams a turn`, async () => {
    const client = createCursorClient({ baseUrl: c.ingress[0]!.url, authToken: c.authToken });
    await waitFor(async () => (await openStreams()) === 0, 30_000, "no streams open");
    const before = await memory();
    // node:http requests the test holds (fetch cancels the body of a Response it collected).
    const idle: ClientRequest[] = [];
    try {
      for (let i = 0; i < IDLE_STREAMS; i++) {
        idle.push(holdIdleRunSse(c.ingress[0]!.url, `idle-${i}-${randomUUID()}`, { authToken: c.authToken }));
        // Bounded in flight: at most about 500 opening at a time.
        if (i % 500 === 499) await waitFor(async () => (await openStreams()) >= i + 1 - 50, 120_000, "idle streams opening");
      }
      await waitFor(async () => (await openStreams()) >= IDLE_STREAMS, 120_000, `${IDLE_STREAMS} idle streams open`);
      const during = await memory();
      const growth = during - before;
      const bound = IDLE_STREAMS * IDLE_STREAM_BOUND + BASE_ALLOWANCE;
      console.log(
        `MEMORY idle_streams=${IDLE_STREAMS} growth_mib=${(growth / MIB).toFixed(1)} per_stream_kib=${(growth / IDLE_STREAMS / 1024).toFixed(1)} bound_mib=${(bound / MIB).toFixed(0)}`,
      );
      expect(growth).toBeLessThan(bound);

      c.sim.enqueue({ text: "still streaming" });
      const requestId = `beside-idle-${randomUUID()}`;
      const turn = await client.runTurn({ requestId, message: runRequestMessage({ text: "hi", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }) });
      expect(turn.end).toEqual({ ok: true });
      expect(turn.textDeltas).toBe("still streaming");
    } finally {
      for (const req of idle) req.destroy();
    }
    await waitFor(async () => (await openStreams()) === 0, 120_000, "idle streams closed");
  }, 400_000);

  it(`${SLOW_READERS} readers that stop reading a replay of ${FRAMES} frames of 1 MiB hold at most a read batch each, then get every frame`, async () => {
    // Privacy mode: the turn's frames go to the output stream only, not into the history.
    const client = createCursorClient({ baseUrl: c.ingress[0]!.url, authToken: c.authToken, ghostMode: true });
    const chunks = Array.from({ length: FRAMES }, (_, k) => `${String(k).padStart(4, "0")}${"x".repeat(FRAME_BYTES - 4)}`);
    c.sim.enqueue({ text: chunks, chunkDelayMs: 50 });
    const requestId = `big-frames-${randomUUID()}`;
    const turn = await client.runTurn({ requestId, message: runRequestMessage({ text: "big", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }) });
    expect(turn.end).toEqual({ ok: true });
    expect(turn.textDeltas).toBe(chunks.join(""));
    const stored = decodeFrames(await xrangeFrames(c.redis, c.keyPrefix, { tenantId: "default", requestId }, 1));
    expect(stored.filter((m) => m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta")).toHaveLength(FRAMES);

    const before = await memory();
    const readers = await Promise.all(Array.from({ length: SLOW_READERS }, () => slowReader(c.ingress[0]!.url, c.authToken, requestId)));
    try {
      await waitFor(async () => (await openStreams()) >= SLOW_READERS, 30_000, "slow readers open");
      // Parked: the streams stop delivering frames once every socket is full.
      let delivered = -1;
      await waitFor(async () => {
        const now = metricSum(await metrics(), "byok_frames_delivered_total");
        const still = now === delivered;
        delivered = now;
        if (!still) await new Promise((r) => setTimeout(r, 500));
        return still;
      }, 60_000, "slow readers parked");
      let peak = 0;
      for (let i = 0; i < 3; i++) peak = Math.max(peak, await memory());
      const growth = peak - before;
      const bound = SLOW_READERS * PARKED_STREAM_BOUND + BASE_ALLOWANCE;
      const replay = SLOW_READERS * FRAMES * FRAME_BYTES;
      console.log(
        `MEMORY slow_readers=${SLOW_READERS} frames=${FRAMES} frame_bytes=${FRAME_BYTES} read_batch_bytes=${READ_BATCH_BYTES} ` +
          `growth_mib=${(growth / MIB).toFixed(1)} bound_mib=${(bound / MIB).toFixed(0)} replay_mib=${(replay / MIB).toFixed(0)}`,
      );
      expect(bound).toBeLessThan(replay);
      expect(growth).toBeLessThan(bound);
      // Reading again, a slow reader gets every frame, whole and in order, and the end {}.
      for (const r of readers.slice(0, 1)) {
        const items = await r.drain();
        expect(decodeFrames(items.flatMap((x) => (x.kind === "message" ? [x.raw] : [])))).toEqual(stored);
        expect(items.at(-1)).toEqual({ kind: "end", end: { ok: true } });
      }
    } finally {
      for (const r of readers) r.res.destroy();
    }
    await waitFor(async () => (await openStreams()) === 0, 30_000, "slow readers closed");
  }, 180_000);
});
