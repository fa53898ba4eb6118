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
  turns?: TurnsResult & { cpuMsPerDelta: number; loadavg1: { start: number; end: number } };
  idle: IdleResult;
}

const bs = await startBenchSim();
/** The turns run on processes with the default settings. */
const turnsEnv = benchGatewayEnv(bs.sim.url);
/** The idle streams on fresh processes (a clean heap to measure) that let them wait. */
const idleEnv = {
  ...turnsEnv,
  // Idle streams wait for their request without heartbeats (really idle).
  GATEWAY_NOT_FOUND_WAIT_MS: "900000",
  GATEWAY_HEARTBEAT_MS: "60000",
  // The default caps (README "Limits") would refuse the streams beyond them.
  GATEWAY_MAX_CONNECTIONS: String(IDLE + 2_000),
  GATEWAY_MAX_RUN_SSE_STREAMS: String(IDLE + 2_000),
};
const NO_IDLE: IdleResult = { streams: 0, heapBeforeMiB: Number.NaN, heapAfterMiB: Number.NaN, heapPerStreamKiB: Number.NaN, rssPerStreamKiB: Number.NaN };

/** Paced turns under CPU accounting on already-started processes (BENCH_SCALE_TURNS=0: none). */
async function turns(entry: Proc, pids: number[], key?: string): Promise<ScaleResult["turns"] | undefined> {
  if (TURNS === 0) return undefined;
  await runTurns(bs, [entry.url], 20, "ttft", 0, key); // warm-up
  log(`${TURNS} concurrent paced turns`);
  const load0 = loadavg()[0]!;
  const c0 = pids.map(cpuSeconds);
  const t = await runTurns(bs, [entry.url], TURNS, "ttft", RAMP_MS, key);
  const cpu = pids.map(cpuSeconds).reduce((n, v, i) => n + (v - c0[i]!), 0);
  return { ...t, cpuMsPerDelta: round((cpu * 1000) / Math.max(1, t.ok * scriptDeltas("ttft")), 3), loadavg1: { start: round(load0), end: round(loadavg()[0]!) } };
}

const results: Record<string, ScaleResult> = {};
const pglite = () => ({ GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "byok-bench-pglite-")) });
if (MODES.includes("embedded")) {
  log("embedded: starting the gateway (PGlite)");
  let gw = await spawnProc("gateway", { ...turnsEnv, ...pglite() });
  try {
    const t = await turns(gw, [gw.pid]);
    await gw.kill();
    log(`embedded: ${IDLE} idle streams on a fresh gateway`);
    gw = await spawnProc("gateway", { ...idleEnv, ...pglite() });
    results.embedded = { ...(t ? { turns: t } : {}), idle: IDLE > 0 ? await idleStreams(gw, IDLE) : NO_IDLE };
  } finally {
    await gw.kill();
  }
}
if (MODES.includes("distributed")) {
  const redis = await startRedis();
  const admin = new Redis(redis.url);
  const procs: Proc[] = [];
  const drops: (() => Promise<void>)[] = [];
  try {
    log("distributed: starting 1 ingress + 1 worker");
    const d = await distributedSetup(turnsEnv, redis.url, DATABASE_URL);
    drops.push(d.drop);
    const [ingress, worker] = await Promise.all([spawnProc("ingress", d.env), spawnProc("worker", d.env)]);
    procs.push(ingress, worker);
    const t = await turns(ingress, [ingress.pid, worker.pid, redisPid(redis.port) ?? -1], d.key);
    for (const p of procs.splice(0)) await p.kill();
    log(`distributed: ${IDLE} idle streams on a fresh ingress`);
    const di = await distributedSetup(idleEnv, redis.url, DATABASE_URL);
    drops.push(di.drop);
    const idleIngress = await spawnProc("ingress", di.env);
    procs.push(idleIngress);
    results.distributed = { ...(t ? { turns: t } : {}), idle: IDLE > 0 ? await idleStreams(idleIngress, IDLE, admin, di.key) : NO_IDLE };
  } finally {
    for (const p of procs) await p.kill();
    admin.disconnect();
    await redis.stop();
    for (const drop of drops) await drop();
  }
}
await bs.sim.close();
console.log(JSON.stringify({ turns: TURNS, idleStreams: IDLE, rampMs: RAMP_MS, loadavgEnd: loadavg().map((l) => round(l)), results }, null, 2));
process.exit(0);
