// `npm run bench`: embedded vs distributed, side by side, on this machine. Not a test.
//   BENCH_TURNS (200)  BENCH_IDLE_STREAMS (10000)  BENCH_TAKEOVER_TRIALS (3)  DATABASE_URL (local Postgres)
// Distributed mode runs on a private redis-server (so INFO commandstats counts only this run)
// and a private Postgres schema; the embedded gateway uses PGlite (on its store thread) as `npm start` does.
import { execSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { benchGatewayEnv, callDelta, idleStreams, redisCommandCalls, relayTurns, runTurns, scriptDeltas, sequentialTurns, startBenchSim, takeover, type IdleResult, type TakeoverResult, type TurnsResult } from "./scenarios.js";
import { cpuSeconds, distributedSetup, redisPid, spawnProc, startRedis, type Proc } from "./services.js";
import { percentile } from "./stats.js";

const TURNS = Number(process.env.BENCH_TURNS ?? 200);
const IDLE = Number(process.env.BENCH_IDLE_STREAMS ?? 10_000);
const TRIALS = Number(process.env.BENCH_TAKEOVER_TRIALS ?? 3);
/** TTFT turns start evenly over this window; each streams for 3 s, so all of them overlap. */
const RAMP_MS = Number(process.env.BENCH_RAMP_MS ?? 2_500);
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);

/** CPU used by the gateway's own processes (not the load generator) while `fn` ran. */
async function withCpu<T extends { frames: number }>(pids: number[], fn: () => Promise<T>): Promise<T & { serviceCpuSeconds: number; serviceCpuMsPerFrame: number; loadavg1: number }> {
  const before = pids.map(cpuSeconds);
  const r = await fn();
  const used = pids.map(cpuSeconds).reduce((n, v, i) => n + (v - before[i]!), 0);
  return { ...r, serviceCpuSeconds: Math.round(used * 100) / 100, serviceCpuMsPerFrame: Math.round((used * 1000 * 1000) / r.frames) / 1000, loadavg1: Math.round(loadavg()[0]! * 100) / 100 };
}

/** CPU-ms per provider delta that reached a client (frames carry several once coalesced). */
function perDelta(m: Measured, kind: "ttft" | "tput"): number {
  const deltas = m.ok * scriptDeltas(kind);
  return deltas > 0 ? Math.round((m.serviceCpuSeconds * 1000 * 1000) / deltas) / 1000 : Number.NaN;
}

type Measured = TurnsResult & { serviceCpuSeconds: number; serviceCpuMsPerFrame: number; loadavg1: number };

interface ModeResult {
  ttft1: TurnsResult;
  ttft50: Measured;
  ttft: Measured;
  tput: Measured;
  idle: IdleResult;
  takeover?: TakeoverResult;
  redisCallsPerFrame?: { ttft: number; tput: number };
  redisCalls?: { ttft: ReturnType<typeof callDelta>; tput: ReturnType<typeof callDelta> };
}

const bs = await startBenchSim();
const common: Record<string, string> = {
  ...benchGatewayEnv(bs.sim.url),
  // Idle streams are held by a raised not-found wait; heartbeats would make them not idle.
  GATEWAY_NOT_FOUND_WAIT_MS: "900000",
  GATEWAY_HEARTBEAT_MS: "60000",
};
const results: Record<string, ModeResult> = {};
/** BENCH_IDLE_STREAMS=0 skips the idle-stream scenario. */
const NO_IDLE: IdleResult = { streams: 0, heapBeforeMiB: Number.NaN, heapAfterMiB: Number.NaN, heapPerStreamKiB: Number.NaN, rssPerStreamKiB: Number.NaN };

// ---- direct relay (baseline) ---------------------------------------------------------------
// The same turns through a minimal Node relay to the same simulator: the gateway's overhead is
// reported as a ratio to this, beside the absolute figures.
let relay: Pick<ModeResult, "ttft1" | "ttft50" | "ttft" | "tput">;
{
  log("direct relay: starting");
  const rp = await spawnProc("relay", { RELAY_TARGET: bs.sim.url });
  try {
    await relayTurns(bs, rp.url, 20, "ttft"); // warm-up
    const seq: TurnsResult[] = [];
    for (let i = 0; i < 10; i++) seq.push(await relayTurns(bs, rp.url, 1, "ttft"));
    const o = seq.map((r) => r.ttftOverheadP50);
    const ttft1 = { ...seq[0]!, turns: 10, ttftOverheadP50: percentile(o, 50), ttftOverheadP99: percentile(o, 99) };
    log(`direct relay: 50 and ${TURNS} concurrent turns (TTFT), throughput`);
    const ttft50 = await withCpu([rp.pid], () => relayTurns(bs, rp.url, 50, "ttft", RAMP_MS));
    const ttft = await withCpu([rp.pid], () => relayTurns(bs, rp.url, TURNS, "ttft", RAMP_MS));
    const tput = await withCpu([rp.pid], () => relayTurns(bs, rp.url, TURNS, "tput"));
    relay = { ttft1, ttft50, ttft, tput };
  } finally {
    await rp.kill();
  }
}

// ---- embedded ------------------------------------------------------------------------------
{
  log("embedded: starting the gateway (PGlite)");
  const gw = await spawnProc("gateway", { ...common, GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "byok-bench-pglite-")) });
  try {
    await runTurns(bs, [gw.url], 20, "ttft"); // warm-up
    log("embedded: 10 turns one at a time (TTFT)");
    const ttft1 = await sequentialTurns(bs, gw.url, 10);
    log("embedded: 50 concurrent turns (TTFT)");
    const ttft50 = await withCpu([gw.pid], () => runTurns(bs, [gw.url], 50, "ttft", RAMP_MS));
    log(`embedded: ${TURNS} concurrent turns (TTFT)`);
    const ttft = await withCpu([gw.pid], () => runTurns(bs, [gw.url], TURNS, "ttft", RAMP_MS));
    log(`embedded: ${TURNS} concurrent turns (throughput)`);
    const tput = await withCpu([gw.pid], () => runTurns(bs, [gw.url], TURNS, "tput"));
    log(`embedded: ${IDLE} idle streams`);
    const idle = IDLE > 0 ? await idleStreams(gw, IDLE) : NO_IDLE;
    results.embedded = { ttft1, ttft50, ttft, tput, idle };
  } catch (err) {
    // A scenario that fails says what the gateway process printed last (and whether it exited).
    log(`embedded: failed; gateway exit ${String(gw.child.exitCode ?? gw.child.signalCode)}, its last lines:\n${gw.lines.slice(-30).join("\n")}`);
    throw err;
  } finally {
    await gw.kill();
  }
}

// ---- distributed ---------------------------------------------------------------------------
{
  const redis = await startRedis();
  const { env, key, schema, drop } = await distributedSetup(common, redis.url, DATABASE_URL);
  const admin = new Redis(redis.url);
  const procs: Proc[] = [];
  try {
    log("distributed: starting 1 ingress + 1 worker (private redis-server, Postgres schema " + schema + ")");
    const [ingress, worker] = await Promise.all([spawnProc("ingress", env), spawnProc("worker", env)]);
    procs.push(ingress, worker);
    await runTurns(bs, [ingress.url], 20, "ttft", 0, key); // warm-up
    const pids = [ingress.pid, worker.pid, redisPid(redis.port) ?? -1];
    log("distributed: 10 turns one at a time (TTFT)");
    const ttft1 = await sequentialTurns(bs, ingress.url, 10, key);
    log("distributed: 50 concurrent turns (TTFT)");
    const ttft50 = await withCpu(pids, () => runTurns(bs, [ingress.url], 50, "ttft", RAMP_MS, key));
    log(`distributed: ${TURNS} concurrent turns (TTFT)`);
    let before = await redisCommandCalls(admin);
    const ttft = await withCpu(pids, () => runTurns(bs, [ingress.url], TURNS, "ttft", RAMP_MS, key));
    const ttftCalls = callDelta(before, await redisCommandCalls(admin));
    log(`distributed: ${TURNS} concurrent turns (throughput)`);
    before = await redisCommandCalls(admin);
    const tput = await withCpu(pids, () => runTurns(bs, [ingress.url], TURNS, "tput", 0, key));
    const tputCalls = callDelta(before, await redisCommandCalls(admin));
    log(`distributed: ${IDLE} idle streams`);
    const idle = IDLE > 0 ? await idleStreams(ingress, IDLE, admin, key) : NO_IDLE;
    log(`distributed: takeover after kill -9 (${TRIALS} trials, default lock/stall settings)`);
    const workers = [worker, await spawnProc("worker", env)];
    procs.push(workers[1]!);
    const to = await takeover(ingress.url, workers, async () => {
      const p = await spawnProc("worker", env);
      procs.push(p);
      return p;
    }, admin, { name: "runs", prefix: "{byok}" }, TRIALS, key);
    results.distributed = {
      ttft1,
      ttft50,
      ttft,
      tput,
      idle,
      takeover: to,
      redisCallsPerFrame: { ttft: Math.round((ttftCalls.total / ttft.frames) * 100) / 100, tput: Math.round((tputCalls.total / tput.frames) * 100) / 100 },
      redisCalls: { ttft: ttftCalls, tput: tputCalls },
    };
  } finally {
    for (const p of procs) await p.kill();
    admin.disconnect();
    await redis.stop();
    await drop();
  }
}
await bs.sim.close();

// ---- report --------------------------------------------------------------------------------
const machine = `load average at the end ${loadavg().map((l) => l.toFixed(2)).join(" ")} (other sessions share this machine), ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, redis-server ${execSync("redis-server --version").toString().match(/v=(\S+)/)?.[1] ?? "?"}, ulimit -n ${execSync("sh -c 'ulimit -n'").toString().trim()}`;
const e = results.embedded!;
const d = results.distributed!;
const row = (label: string, a: string | number, b: string | number, c: string | number = "") => `| ${label} | ${a} | ${b} | ${c} |`;
const r = relay;
const x = (v: number, base: number) => (base > 0 ? `${Math.round((v / base) * 10) / 10}×` : "n/a");
const to = d.takeover!;
console.log(
  [
    `Machine: ${machine}`,
    "",
    "| metric | embedded | distributed (1 ingress + 1 worker) | direct relay (baseline) |",
    "|---|---|---|---|",
    row("TTFT overhead p50 / max (ms), 1 turn at a time (10 turns)", `${e.ttft1.ttftOverheadP50} / ${e.ttft1.ttftOverheadP99}`, `${d.ttft1.ttftOverheadP50} / ${d.ttft1.ttftOverheadP99}`, `${r.ttft1.ttftOverheadP50} / ${r.ttft1.ttftOverheadP99}`),
    row("TTFT overhead p50 / p99 (ms), 50 concurrent turns", `${e.ttft50.ttftOverheadP50} / ${e.ttft50.ttftOverheadP99}`, `${d.ttft50.ttftOverheadP50} / ${d.ttft50.ttftOverheadP99}`, `${r.ttft50.ttftOverheadP50} / ${r.ttft50.ttftOverheadP99}`),
    row("peak concurrent streaming turns (TTFT run)", e.ttft.peakConcurrent, d.ttft.peakConcurrent, r.ttft.peakConcurrent),
    row(`TTFT overhead p50 (ms), ${TURNS} concurrent turns`, e.ttft.ttftOverheadP50, d.ttft.ttftOverheadP50, r.ttft.ttftOverheadP50),
    row(`TTFT overhead p99 (ms), ${TURNS} concurrent turns`, e.ttft.ttftOverheadP99, d.ttft.ttftOverheadP99, r.ttft.ttftOverheadP99),
    row(`… as a ratio to the relay, p50 / p99 (${TURNS} turns)`, `${x(e.ttft.ttftOverheadP50, r.ttft.ttftOverheadP50)} / ${x(e.ttft.ttftOverheadP99, r.ttft.ttftOverheadP99)}`, `${x(d.ttft.ttftOverheadP50, r.ttft.ttftOverheadP50)} / ${x(d.ttft.ttftOverheadP99, r.ttft.ttftOverheadP99)}`, "1×"),
    row("turns ok (TTFT run)", `${e.ttft.ok}/${e.ttft.turns}`, `${d.ttft.ok}/${d.ttft.turns}`, `${r.ttft.ok}/${r.ttft.turns}`),
    row(`delivered frames/s, ${TURNS} concurrent turns × 200 deltas`, e.tput.framesPerSecond, d.tput.framesPerSecond, r.tput.framesPerSecond),
    row(`provider deltas delivered/s, ${TURNS} × 200 (ratio to the relay)`, `${e.tput.deltasPerSecond} (${x(e.tput.deltasPerSecond, r.tput.deltasPerSecond)})`, `${d.tput.deltasPerSecond} (${x(d.tput.deltasPerSecond, r.tput.deltasPerSecond)})`, r.tput.deltasPerSecond),
    row("turns ok (throughput run)", `${e.tput.ok}/${e.tput.turns}`, `${d.tput.ok}/${d.tput.turns}`, `${r.tput.ok}/${r.tput.turns}`),
    row("gateway CPU-ms per delivered frame (paced / burst)", `${e.ttft.serviceCpuMsPerFrame} / ${e.tput.serviceCpuMsPerFrame}`, `${d.ttft.serviceCpuMsPerFrame} / ${d.tput.serviceCpuMsPerFrame}`, `${r.ttft.serviceCpuMsPerFrame} / ${r.tput.serviceCpuMsPerFrame}`),
    row("gateway CPU-ms per provider delta (paced / burst)", `${perDelta(e.ttft, "ttft")} / ${perDelta(e.tput, "tput")}`, `${perDelta(d.ttft, "ttft")} / ${perDelta(d.tput, "tput")}`, `${perDelta(r.ttft, "ttft")} / ${perDelta(r.tput, "tput")}`),
    row("machine load average (1 min) at the end of the paced / burst run", `${e.ttft.loadavg1} / ${e.tput.loadavg1}`, `${d.ttft.loadavg1} / ${d.tput.loadavg1}`, `${r.ttft.loadavg1} / ${r.tput.loadavg1}`),
    row(`idle RunSSE streams held`, e.idle.streams, d.idle.streams),
    row("heap per idle stream (KiB)", e.idle.heapPerStreamKiB, d.idle.heapPerStreamKiB),
    row("RSS per idle stream (KiB)", e.idle.rssPerStreamKiB, d.idle.rssPerStreamKiB),
    row("heap before → after (MiB)", `${e.idle.heapBeforeMiB} → ${e.idle.heapAfterMiB}`, `${d.idle.heapBeforeMiB} → ${d.idle.heapAfterMiB}`),
    row("Redis connections of the ingress, before → with streams", "n/a", `${d.idle.redisConnectionsBefore} → ${d.idle.redisConnectionsAfter}`),
    row("Redis commands per delivered frame, incl. commands inside scripts (paced / burst)", "n/a", `${d.redisCallsPerFrame!.ttft} / ${d.redisCallsPerFrame!.tput}`),
    row(
      `takeover after kill -9: kill → notice (ms), ${TRIALS} trials`,
      "n/a (one process)",
      `${to.noticeMs.join(", ")} (p50 ${percentile(to.noticeMs, 50)})`,
    ),
    row("kill → first text of the re-run (ms)", "n/a", to.resumedMs.join(", ")),
  ].join("\n"),
);
console.log("\n```json\n" + JSON.stringify({ machine, turns: TURNS, idleStreams: IDLE, relay, results }, null, 2) + "\n```");
process.exit(0);
