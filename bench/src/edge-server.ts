// The RunSSE edge alone for `npm run bench:edge` (bench/src/edge.ts): the real edge handler
// (libs/edge) on an in-memory bus holding one ended generation of EDGE_FRAMES frames of
// EDGE_FRAME_BYTES text-like bytes, so every RunSSE replays the same output from the start.
// Also serves `/bench/loop` (the event-loop delay since the last call, then reset) and
// `/bench/ping`. Prints `EDGE_READY <url> <requestId>`.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createMemoryBus } from "@byok/bus";
import { createEdgeHandler, createOpenAuthenticator, OpenStreams } from "@byok/edge";
import { createLogger, createMetrics } from "@byok/telemetry";

const FRAMES = Number(process.env.EDGE_FRAMES ?? 400);
const FRAME_BYTES = Number(process.env.EDGE_FRAME_BYTES ?? 4096);
const TENANT = "bench";
const REQUEST_ID = "bench-edge-replay";

/** Text-like bytes (words drawn at random): gzip gets a realistic ratio, not a run of zeros. */
function textFrame(bytes: number, seed: number): Uint8Array {
  const words = ["the", "function", "returns", "a", "value", "when", "called", "with", "const", "import", "from", "await", "string", "number", "error", "result", "file", "line", "test", "model"];
  let x = seed * 2654435761 + 1;
  const out: string[] = [];
  let n = 0;
  while (n < bytes) {
    x = (x * 1103515245 + 12345) >>> 0;
    const w = words[x % words.length]!;
    out.push(w);
    n += w.length + 1;
  }
  return new TextEncoder().encode(out.join(" ").slice(0, bytes));
}

const bus = createMemoryBus({ seqnoWindow: 64, maxOutputFrames: FRAMES + 10, maxInputEntries: 10, finishedRetentionMs: 24 * 3_600_000, sequenceStateTtlMs: 24 * 3_600_000 });
const ref = { tenantId: TENANT, requestId: REQUEST_ID };
const { generation } = await bus.appendInput(ref, 1n, new Uint8Array([0x0a, 0x00]), {});
const epoch = (await bus.claim(ref, generation)).epoch;
for (let i = 0; i < FRAMES; i += 100) {
  const frames = Array.from({ length: Math.min(100, FRAMES - i) }, (_, j) => textFrame(FRAME_BYTES, i + j));
  await bus.appendOutput(ref, generation, epoch, frames, {});
}
await bus.endOutput(ref, generation, epoch, { ok: true });

const edge = createEdgeHandler({
  bus,
  dispatcher: { dispatch: async () => {}, admit: async () => undefined },
  auth: createOpenAuthenticator(TENANT),
  timers: { heartbeatMs: 60_000, notFoundWaitMs: 1_000, newGenerationWaitMs: 0, readerTtlMs: 30_000 },
  limits: { maxPayloadBytes: 1 << 20, readBatchBytes: 4 << 20 },
  logger: createLogger({ service: "bench-edge", level: "silent" }),
  metrics: createMetrics(),
  streams: new OpenStreams(100_000),
});

const loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();
const ms = (ns: number) => Math.round(ns / 10_000) / 100;
const server = createServer((req, res) => {
  if (req.url === "/bench/ping") return void res.writeHead(200).end("ok");
  if (req.url === "/bench/loop") {
    const body = JSON.stringify({ p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) });
    loop.reset();
    return void res.writeHead(200, { "content-type": "application/json" }).end(body);
  }
  edge(req, res);
});
server.listen(0, "127.0.0.1", () => {
  console.log(`EDGE_READY http://127.0.0.1:${(server.address() as AddressInfo).port} ${REQUEST_ID}`);
});
process.once("SIGTERM", () => process.exit(0));
