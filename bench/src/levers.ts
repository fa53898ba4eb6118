// `npm run bench:levers`: the load-insensitive figures of the distributed deployment (1 ingress +
// 1 worker, private redis-server, private Postgres schema behind a counting proxy), for A/B runs
// of one change at a time on a shared machine: Redis commands per delivered frame / provider delta
// / turn (by command, script-internal calls included), store statements per turn (by statement),
// gateway CPU-ms per provider delta, read and write syscalls per turn, each process's event-loop
// delay while the turns ran, and optionally kill -9 takeover trials. Not a test.
//   BENCH_TURNS (200; 0 = takeover trials only)  BENCH_KIND (ttft: paced; tput: bursts; fixed: one delta)  BENCH_RAMP_MS (2500)
//   BENCH_TAKEOVER_TRIALS (0)  DATABASE_URL  BENCH_TTFT_DELTAS (60)  BENCH_NODE_ARGS (flags of the gateway processes)
//   BENCH_PROC_LOG_DIR (writes each gateway process's output there)  BENCH_CONVERSATION_TURNS (0: every turn starts a conversation)
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { startPgCounter } from "./pg-count.js";
import { benchGatewayEnv, benchKind, callDelta, earlierConversations, redisCommandCalls, runTurns, scriptDeltas, startBenchSim, takeover } from "./scenarios.js";
import { cpuSeconds, cpuTimes, distributedSetup, ioSyscalls, metricIn, metricsPage, redisPid, spawnProc, startRedis, type Proc } from "./services.js";
import { percentile, round } from "./stats.js";

const TURNS = Number(process.env.BENCH_TURNS ?? 200);
const RAMP_MS = Number(process.env.BENCH_RAMP_MS ?? 2_500);
const TRIALS = Number(process.env.BENCH_TAKEOVER_TRIALS ?? 0);
/** `ttft` (paced, ~1 delta per frame) or `tput` (bursts, many deltas per frame): the two split a turn's CPU into fixed and per-frame. */
const KIND = benchKind(process.env.BENCH_KIND);
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const log = (s: string) => process.stderr.write(`[bench:levers] ${s}\n`);

const diff = (before: Map<string, number>, after: Map<string, number>) => callDelta(before, after);
const per = (n: number, d: number) => (d > 0 ? round(n / d, 3) : Number.NaN);

const bs = await startBenchSim();
const redis = await startRedis();
const pgc = await startPgCounter(DATABASE_URL);
const { env, key, drop } = await distributedSetup(benchGatewayEnv(bs.sim.url), redis.url, DATABASE_URL, pgc.url);
const admin = new Redis(redis.url);
const procs: Proc[] = [];
try {
  const [ingress, worker] = await Promise.all([spawnProc("ingress", env), spawnProc("worker", env)]);
  procs.push(ingress, worker);
  if (TURNS > 0) await runTurns(bs, [ingress.url], 20, "ttft", 0, key); // warm-up
  const earlier = await earlierConversations([ingress.url], TURNS, key);
  const pids = [ingress.pid, worker.pid, redisPid(redis.port) ?? -1];
  const load0 = loadavg()[0]!;
  // Event-loop delay of each gateway process over the measured turns: prom-client resets its
  // histogram on every scrape, so this scrape starts the window and the one after the turns reads it.
  await Promise.all([ingress, worker].map((p) => loopDelay(p.url)));
  const [r0, s0, c0, k0, io0] = [await redisCommandCalls(admin), pgc.snapshot(), pids.map(cpuSeconds), pids.map((p) => cpuTimes(p).system), pids.map(ioSyscalls)];
  log(`${TURNS} ${KIND === "ttft" ? "paced" : KIND === "tput" ? "burst" : "one-delta"} turns`);
  // BENCH_TURNS=0: takeover trials only.
  const t = TURNS > 0 ? await runTurns(bs, [ingress.url], TURNS, KIND, RAMP_MS, key, earlier) : { ok: 0, frames: 0, ttftOverheadP50: Number.NaN, ttftOverheadP99: Number.NaN };
  // Let the runs' last writes (ledger settlement, end) land before counting.
  await new Promise((r) => setTimeout(r, 1_000));
  const [r1, s1, c1, k1, io1] = [await redisCommandCalls(admin), pgc.snapshot(), pids.map(cpuSeconds), pids.map((p) => cpuTimes(p).system), pids.map(ioSyscalls)];
  const loopDelayMs = { ingress: await loopDelay(ingress.url), worker: await loopDelay(worker.url) };
  const load1 = loadavg()[0]!;
  const rc = diff(r0, r1);
  const sc = diff(s0, s1);
  const cpu = c1.map((v, i) => v - c0[i]!);
  const kernel = k1.map((v, i) => v - k0[i]!);
  const deltas = t.ok * scriptDeltas(KIND);
  let to: { noticeMs: number[]; resumedMs: number[] } | undefined;
  if (TRIALS > 0) {
    log(`takeover after kill -9 (${TRIALS} trials)`);
    const workers = [worker, await spawnProc("worker", env)];
    procs.push(workers[1]!);
    to = await takeover(ingress.url, workers, async () => {
      const p = await spawnProc("worker", env);
      procs.push(p);
      return p;
    }, admin, { name: "runs", prefix: "{byok}" }, TRIALS, key);
  }
  const out = {
    turns: TURNS,
    kind: KIND,
    ok: t.ok,
    frames: t.frames,
    providerDeltas: deltas,
    loadavg1: { start: round(load0), end: round(load1) },
    ttftOverheadMs: { p50: t.ttftOverheadP50, p99: t.ttftOverheadP99 },
    redis: {
      commands: rc.total,
      perFrame: per(rc.total, t.frames),
      perDelta: per(rc.total, deltas),
      perTurn: per(rc.total, TURNS),
      perTurnByCommand: Object.fromEntries(Object.entries(rc.byCommand).map(([k, v]) => [k, per(v, TURNS)])),
    },
    store: {
      statements: sc.total,
      perTurn: per(sc.total, TURNS),
      perTurnByStatement: Object.fromEntries(Object.entries(sc.byCommand).map(([k, v]) => [k, per(v, TURNS)])),
    },
    cpuMsPerDelta: { ingress: per(cpu[0]! * 1000, deltas), worker: per(cpu[1]! * 1000, deltas), redis: per(cpu[2]! * 1000, deltas), gateway: per((cpu[0]! + cpu[1]!) * 1000, deltas) },
    // The part of the above spent in the kernel (syscalls: on loopback a socket write also runs the receiver's TCP path).
    kernelCpuMsPerDelta: { ingress: per(kernel[0]! * 1000, deltas), worker: per(kernel[1]! * 1000, deltas), redis: per(kernel[2]! * 1000, deltas) },
    // p50 / p99 / max delay of each process's event loop while the turns ran (prom-client's sampler, 10 ms resolution).
    eventLoopDelayMs: loopDelayMs,
    // Read and write syscalls per turn, by process (all sockets: client, Redis, PostgreSQL, provider).
    syscallsPerTurn: Object.fromEntries((["ingress", "worker", "redis"] as const).map((name, i) => [name, {
      reads: per(io1[i]!.reads - io0[i]!.reads, TURNS),
      writes: per(io1[i]!.writes - io0[i]!.writes, TURNS),
    }])),
    ...(to
      ? {
          takeover: {
            ...to,
            noticeP50: percentile(to.noticeMs, 50),
            resumedP50: percentile(to.resumedMs, 50),
            // How the dead worker was found: its vanished presence (vs. waiting out its job lock).
            freedByPresence: procs.flatMap((p) => p.lines).filter((l) => l.includes("freed the runs of a dead worker")).length,
          },
        }
      : {}),
  };
  console.log(JSON.stringify(out, null, 2));
  // BENCH_PROC_LOG_DIR: each gateway process's output, e.g. its GC trace with BENCH_NODE_ARGS=--trace-gc.
  const logDir = process.env.BENCH_PROC_LOG_DIR;
  if (logDir) for (const p of procs) writeFileSync(join(logDir, `${p.name}.log`), `${p.lines.join("\n")}\n`);
} finally {
  for (const p of procs) await p.kill();
  admin.disconnect();
  await redis.stop();
  await pgc.close();
  await drop();
  await bs.sim.close();
}
process.exit(0);

/** The event-loop delay a gateway process reports (prom-client's nodejs_eventloop_lag_*), in ms. */
async function loopDelay(url: string): Promise<{ p50: number; p99: number; max: number }> {
  // One scrape: each scrape resets the sampler.
  const page = await metricsPage(url);
  const ms = (q: string) => round(metricIn(page, `byok_nodejs_eventloop_lag_${q}_seconds`) * 1000);
  return { p50: ms("p50"), p99: ms("p99"), max: ms("max") };
}
