// `npm run bench:scale`: the scale targets of issue 14 on this machine, embedded then distributed
// (1 ingress + 1 worker, private redis-server and Postgres schema). Not a test.
//   - BENCH_SCALE_TURNS (1000) concurrent paced turns (60 deltas 50 ms apart), started over
//     BENCH_RAMP_MS (2500): turns ok, TTFT overhead p50 / p99, gateway CPU per provider delta;
//   - BENCH_SCALE_IDLE (18000) idle RunSSE streams on one process: heap and RSS per stream,
//     Redis connections of the ingress before and with them. Each stream is a socket on both
//     sides, so this is bounded by the hard `ulimit -n` of the load generator and the gateway
//     (20000 on the machines this was written on; 50,000 needs a raised limit).
//   BENCH_SCALE_MODES (embedded,distributed)  DATABASE_URL (local Postgres)
import { mkdtempSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { benchGatewayEnv, idleStreams, runTurns, scriptDeltas, startBenchSim, type IdleResult, type TurnsResult } from "./scenarios.js";
import { cpuSeconds, distributedSetup, redisPid, spawnProc, startRedis, type Proc } from "./services.js";
import { round } from "./stats.js";

const TURNS = Number(process.env.BENCH_SCALE_TURNS ?? 1_000);
const IDLE = Number(process.env.BENCH_SCALE_IDLE ?? 18_000);
const RAMP_MS = Number(process.env.BENCH_RAMP_MS ?? 2_500);
const MODES = (process.env.BENCH_SCALE_MODES ?? "embedded,distributed").split(",");
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const log = (s: string) => process.stderr.write(`[bench:scale] ${s}\n`);

interface ScaleResult {
  turns: TurnsResult & { cpuMsPerDelta: number; loadavg1: { start: number; end: number } };
  idle: IdleResult;
}

const bs = await startBenchSim();
const env = {
  ...benchGatewayEnv(bs.sim.url),
  // Idle streams wait for their request without heartbeats (really idle).
  GATEWAY_NOT_FOUND_WAIT_MS: "900000",
  GATEWAY_HEARTBEAT_MS: "60000",
  // The default connection cap (docs/operations.md) would refuse the streams beyond it.
  GATEWAY_MAX_CONNECTIONS: String(IDLE + 2_000),
};

/** Paced turns under CPU accounting, then the idle streams, on already-started processes. */
async function measure(entry: Proc, pids: number[], key?: string, redis?: Redis): Promise<ScaleResult> {
  await runTurns(bs, [entry.url], 20, "ttft", 0, key); // warm-up
  log(`${TURNS} concurrent paced turns`);
  const load0 = loadavg()[0]!;
  const c0 = pids.map(cpuSeconds);
  const t = await runTurns(bs, [entry.url], TURNS, "ttft", RAMP_MS, key);
  const cpu = pids.map(cpuSeconds).reduce((n, v, i) => n + (v - c0[i]!), 0);
  const turns = { ...t, cpuMsPerDelta: round((cpu * 1000) / Math.max(1, t.ok * scriptDeltas("ttft")), 3), loadavg1: { start: round(load0), end: round(loadavg()[0]!) } };
  log(`${IDLE} idle streams`);
  const idle = IDLE > 0 ? await idleStreams(entry, IDLE, redis, key) : { streams: 0, heapBeforeMiB: Number.NaN, heapAfterMiB: Number.NaN, heapPerStreamKiB: Number.NaN, rssPerStreamKiB: Number.NaN };
  return { turns, idle };
}

const results: Record<string, ScaleResult> = {};
if (MODES.includes("embedded")) {
  log("embedded: starting the gateway (PGlite)");
  const gw = await spawnProc("gateway", { ...env, GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "byok-bench-pglite-")) });
  try {
    results.embedded = await measure(gw, [gw.pid]);
  } finally {
    await gw.kill();
  }
}
if (MODES.includes("distributed")) {
  const redis = await startRedis();
  const d = await distributedSetup(env, redis.url, DATABASE_URL);
  const admin = new Redis(redis.url);
  const procs: Proc[] = [];
  try {
    log("distributed: starting 1 ingress + 1 worker");
    const [ingress, worker] = await Promise.all([spawnProc("ingress", d.env), spawnProc("worker", d.env)]);
    procs.push(ingress, worker);
    results.distributed = await measure(ingress, [ingress.pid, worker.pid, redisPid(redis.port) ?? -1], d.key, admin);
  } finally {
    for (const p of procs) await p.kill();
    admin.disconnect();
    await redis.stop();
    await d.drop();
  }
}
await bs.sim.close();
console.log(JSON.stringify({ turns: TURNS, idleStreams: IDLE, rampMs: RAMP_MS, loadavgEnd: loadavg().map((l) => round(l)), results }, null, 2));
process.exit(0);
