// `npm run bench:edge`: the RunSSE edge alone (bench/src/edge-server.ts in its own process),
// replaying one stored output to EDGE_READERS concurrent RunSSE streams, with and without
// `connect-accept-encoding: gzip`. Reports the edge's CPU, the replay's wall time and
// throughput, the edge's event-loop delay and the latency of a small request sent every 10 ms
// meanwhile (what per-frame compression on the event loop would cost every other client).
//   EDGE_READERS (50)  EDGE_FRAMES (400)  EDGE_FRAME_BYTES (4096)  EDGE_ROUNDS (3)
import { spawn } from "node:child_process";
import { request } from "node:http";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import { BidiRequestIdSchema, encodeEnvelope } from "@byok/wire";
import { cpuSeconds } from "./services.js";
import { percentile } from "./stats.js";

const READERS = Number(process.env.EDGE_READERS ?? 50);
const ROUNDS = Number(process.env.EDGE_ROUNDS ?? 3);
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const log = (s: string) => process.stderr.write(`[bench:edge] ${s}\n`);

const child = spawn(process.execPath, ["--import", "tsx", "bench/src/edge-server.ts"], { cwd: ROOT, env: process.env, stdio: ["ignore", "pipe", "inherit"] });
const { url, requestId } = await new Promise<{ url: string; requestId: string }>((resolve, reject) => {
  let buf = "";
  child.stdout!.on("data", (c: Buffer) => {
    buf += c.toString();
    const m = /EDGE_READY (\S+) (\S+)/.exec(buf);
    if (m) resolve({ url: m[1]!, requestId: m[2]! });
  });
  child.once("exit", (code) => reject(new Error(`edge-server exited (${code})`)));
});

const body = encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })));

/** One RunSSE read to its end: bytes received and the envelopes' flags. */
function readRunSse(gzip: boolean): Promise<{ bytes: number; compressed: number }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { "content-type": "application/connect+proto", "connect-protocol-version": "1" };
    if (gzip) headers["connect-accept-encoding"] = "gzip";
    const req = request(`${url}/agent.v1.AgentService/RunSSE`, { method: "POST", headers, agent: false }, (res) => {
      let bytes = 0;
      let compressed = 0;
      let pending: Buffer = Buffer.alloc(0);
      res.on("data", (c: Buffer) => {
        bytes += c.length;
        pending = pending.length ? Buffer.concat([pending, c]) : c;
        while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
          if (pending[0] === 1) compressed++;
          pending = pending.subarray(5 + pending.readUInt32BE(1));
        }
      });
      res.on("end", () => resolve({ bytes, compressed }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

function ping(): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(`${url}/bench/ping`, { agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(performance.now() - t0));
    });
    req.on("error", reject);
    req.end();
  });
}

const loopStats = async () => (await (await fetch(`${url}/bench/loop`)).json()) as { p50: number; p99: number; max: number };

async function scenario(gzip: boolean) {
  await readRunSse(gzip); // warm-up
  await loopStats();
  const cpu0 = cpuSeconds(child.pid!);
  const t0 = performance.now();
  let done = false;
  const pings: number[] = [];
  const prober = (async () => {
    while (!done) {
      pings.push(await ping());
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const reads = await Promise.all(Array.from({ length: READERS }, () => readRunSse(gzip)));
  const wallMs = performance.now() - t0;
  done = true;
  await prober;
  const cpu = cpuSeconds(child.pid!) - cpu0;
  const loop = await loopStats();
  const wireBytes = reads.reduce((n, r) => n + r.bytes, 0);
  return {
    gzip,
    readers: READERS,
    wallMs: Math.round(wallMs),
    wireMiB: Math.round((wireBytes / 1048576) * 10) / 10,
    compressedFrames: reads.reduce((n, r) => n + r.compressed, 0),
    edgeCpuS: Math.round(cpu * 100) / 100,
    loopDelayMs: loop,
    pingMs: { n: pings.length, p50: Math.round(percentile(pings, 50) * 10) / 10, p99: Math.round(percentile(pings, 99) * 10) / 10, max: Math.round(Math.max(...pings) * 10) / 10 },
    loadavg1: Math.round(loadavg()[0]! * 100) / 100,
  };
}

const results = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const gzip of [true, false]) {
    log(`round ${round + 1}/${ROUNDS}, gzip=${gzip}`);
    results.push(await scenario(gzip));
  }
}
child.kill("SIGTERM");
console.log(JSON.stringify({ machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version }, frames: Number(process.env.EDGE_FRAMES ?? 400), frameBytes: Number(process.env.EDGE_FRAME_BYTES ?? 4096), results }, null, 2));
