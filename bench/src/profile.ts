// `npm run bench:profile`: the embedded gateway under `node --cpu-prof` while it serves the
// paced TTFT scenario (BENCH_TURNS concurrent turns; BENCH_KIND=tput: the burst one, fixed: one-delta turns, all fixed cost), then the profile's top frames by self time
// and the same grouped by package, the project's functions by inclusive time, and the busy time by
// part of the gateway (PARTS). BENCH_PROFILE_MODE=distributed profiles 1 ingress + 1 worker
// (private redis-server, private Postgres schema) instead, one summary per process. The raw
// .cpuprofile files stay in the printed directory (open them in Chrome DevTools or speedscope for
// the flame graph). BENCH_PROFILER=perf samples on-CPU time with Linux `perf` instead (the
// processes run with --perf-basic-prof so JIT frames have names): V8's profiler samples wall
// time, so a process descheduled inside a syscall (a loopback write that wakes Redis or
// Postgres on the same core) is charged to that syscall; perf counts only CPU actually spent.
// Not a test.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchGatewayEnv, benchKind, runTurns, startBenchSim } from "./scenarios.js";
import { distributedSetup, spawnProc, startRedis, type Proc } from "./services.js";

const TURNS = Number(process.env.BENCH_TURNS ?? 200);
const RAMP_MS = Number(process.env.BENCH_RAMP_MS ?? 2_500);
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 25);
const MODE = process.env.BENCH_PROFILE_MODE ?? "embedded";
/** `ttft` (paced) or `tput` (bursts: a turn's fixed cost stands out). */
const KIND = benchKind(process.env.BENCH_KIND);
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
/** `v8` (--cpu-prof, wall-clock samples) or `perf` (Linux perf, on-CPU samples). */
const PROFILER = process.env.BENCH_PROFILER === "perf" ? "perf" : "v8";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  /** µs on the monotonic clock (the one process.hrtime reads). */
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Monotonic µs, the clock of a .cpuprofile's startTime. */
const nowUs = () => Number(process.hrtime.bigint() / 1000n);
/** The measured turns' time window: only samples inside it are summarized (start-up and warm-up are not). */
let window: [number, number] | undefined;

/** Runs the scenario under --cpu-prof; returns the profiles' paths and a one-line summary. */
async function profileRun(): Promise<{ paths: string[]; what: string }> {
  const bs = await startBenchSim();
  const dir = mkdtempSync(join(tmpdir(), "byok-cpuprof-"));
  // Named per process; unnamed (V8's CPU.<date>.<time>.<pid>.<thread>.<seq>) for the embedded
  // gateway, whose store thread inherits the flags and would otherwise write the same file.
  const prof = (name: string | undefined) => (PROFILER === "perf" ? ["--perf-basic-prof"] : ["--cpu-prof", "--cpu-prof-dir", dir, ...(name ? ["--cpu-prof-name", `${name}.cpuprofile`] : [])]);
  /** perf: records each process during the measured turns only; v8: the window filters the samples instead. */
  const measured = async <T>(procs: Record<string, Proc>, turns: () => Promise<T>): Promise<T> => {
    if (PROFILER !== "perf") return turns();
    const recorders = Object.entries(procs).map(([name, p]) => spawn("perf", ["record", "-F", "1999", "-g", "-o", join(dir, `${name}.perf.data`), "-p", String(p.pid)], { stdio: "ignore" }));
    await new Promise((r) => setTimeout(r, 500)); // perf attached
    try {
      return await turns();
    } finally {
      await Promise.all(recorders.map((r) => new Promise((done) => {
        r.once("exit", done);
        r.kill("SIGINT");
      })));
    }
  };
  const outputs = (names: string[]) => names.map((n) => join(dir, PROFILER === "perf" ? `${n}.perf.data` : `${n}.cpuprofile`));
  try {
    if (MODE === "distributed") {
      const redis = await startRedis();
      const { env, key, drop } = await distributedSetup(benchGatewayEnv(bs.sim.url), redis.url, DATABASE_URL);
      try {
        const [ingress, worker] = await Promise.all([spawnProc("ingress", env, prof("ingress")), spawnProc("worker", env, prof("worker"))]);
        await runTurns(bs, [ingress.url], 20, "ttft", 0, key); // warm-up
        const from = nowUs();
        const r = await measured({ ingress, worker }, () => runTurns(bs, [ingress.url], TURNS, KIND, RAMP_MS, key));
        window = [from, nowUs()];
        await Promise.all([ingress.kill("SIGTERM"), worker.kill("SIGTERM")]); // a clean exit writes the profile
        return { paths: outputs(["ingress", "worker"]), what: `distributed, ${TURNS} ${KIND} turns, ${r.ok} ok, ${r.frames} frames` };
      } finally {
        await redis.stop();
        await drop();
      }
    }
    const gw = await spawnProc("gateway", { ...benchGatewayEnv(bs.sim.url), GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "byok-bench-pglite-")) }, prof(undefined));
    await runTurns(bs, [gw.url], 20, "ttft"); // warm-up
    const from = nowUs();
    const r = await measured({ gateway: gw }, () => runTurns(bs, [gw.url], TURNS, KIND, RAMP_MS));
    window = [from, nowUs()];
    await gw.kill("SIGTERM"); // a clean exit writes the profile
    const what = `embedded, ${TURNS} ${KIND} turns, ${r.ok} ok, ${r.frames} frames`;
    if (PROFILER === "perf") return { paths: [join(dir, "gateway.perf.data")], what };
    // The main thread (thread 0) first, then the embedded store's thread.
    const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile")).sort((a, b) => threadOf(a) - threadOf(b));
    if (files.length === 0) throw new Error(`no .cpuprofile in ${dir}`);
    return { paths: files.map((f) => join(dir, f)), what };
  } finally {
    await bs.sim.close();
  }
}

/** The thread id in V8's default profile name CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile. */
const threadOf = (file: string) => Number(file.split(".")[4] ?? 0);

/** Top frames and packages by self time of one profile. */
function summarize(path: string): void {
  const prof = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const selfUs = new Map<number, number>();
  let t = prof.startTime;
  prof.samples.forEach((id, i) => {
    const dt = prof.timeDeltas[i] ?? 0;
    t += dt;
    if (window && (t < window[0] || t > window[1])) return;
    selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
  });
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const byFrame = new Map<string, number>();
  const byPackage = new Map<string, number>();
  for (const n of prof.nodes) {
    const us = selfUs.get(n.id) ?? 0;
    if (!us) continue;
    const { functionName, url, lineNumber } = n.callFrame;
    const where = url.replace(/^file:\/\//, "").replace(/^.*?\/(node_modules|libs|services)\//, "$1/");
    const frame = `${functionName || "(anonymous)"} ${where}:${lineNumber + 1}`;
    byFrame.set(frame, (byFrame.get(frame) ?? 0) + us);
    const pkg = url.startsWith("wasm://") ? "@electric-sql/pglite (wasm)" : url === "" ? `native: ${functionName.startsWith("(") ? functionName : "I/O and builtins"}` : /node_modules\/(@[^/]+\/[^/]+|[^/]+)/.exec(where)?.[1] ?? /^(libs\/[^/]+|services\/[^/]+)/.exec(where)?.[1] ?? (url.startsWith("node:") ? "node core" : functionName.startsWith("(") ? functionName : "other");
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
  }
  // Inclusive time of the project's own functions (libs/, services/): what each costs with its callees.
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const nodeById = new Map(prof.nodes.map((n) => [n.id, n]));
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const { functionName, url } = nodeById.get(cur)!.callFrame;
      const own = /\/(libs|services)\/([^/]+)\/(?:src|dist)\/(.+)$/.exec(url);
      if (!own) continue;
      const key = `${functionName || "(anonymous)"} ${own[1]}/${own[2]}/${own[3]}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
  }
  // Busy time by part of the gateway: each sample counts once, in the first part (PARTS' order)
  // that any frame of its stack belongs to.
  const byPart = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of selfUs) {
    if (nodeById.get(id)!.callFrame.functionName === "(idle)") continue;
    busy += us;
    let part = "other";
    let rank = PARTS.length;
    for (let cur: number | undefined = id; cur !== undefined && rank > 0; cur = parent.get(cur)) {
      const { functionName, url } = nodeById.get(cur)!.callFrame;
      const i = PARTS.findIndex(([, matches]) => matches(functionName, url));
      if (i !== -1 && i < rank) [rank, part] = [i, PARTS[i]![0]];
    }
    byPart.set(part, (byPart.get(part) ?? 0) + us);
  }
  const pct = (us: number) => `${((us * 100) / total).toFixed(1)}%`;
  const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, us]) => `| ${pct(us)} | ${k.replaceAll("|", "\\|")} |`);
  console.log(`\nprofile: ${path}, ${(total / 1e6).toFixed(2)} s sampled (${window ? "the measured turns only" : "whole process life, start-up included"})`);
  console.log(["", "| self | frame |", "|---|---|", ...top(byFrame, TOP)].join("\n"));
  console.log(["", "| self | package |", "|---|---|", ...top(byPackage, 15)].join("\n"));
  console.log(["", "| inclusive | project function |", "|---|---|", ...top(inclusive, TOP)].join("\n"));
  const ofBusy = (us: number) => `${((us * 100) / busy).toFixed(1)}%`;
  console.log(["", "| share of busy time | part |", "|---|---|", ...[...byPart].sort((a, b) => b[1] - a[1]).map(([k, us]) => `| ${ofBusy(us)} | ${k} |`)].join("\n"));
}

/**
 * The parts of the gateway a sample is charged to, in order: a stack that runs through several
 * counts in the first (a Redis write inside a snapshot save is the snapshot's, a BidiAppend's append
 * script is the BidiAppend's, the engine's Redis and store calls are Redis's and the store's,
 * the undici Headers Connect builds are Connect's). `url` is the script's URL, `name` the function's.
 */
const PARTS: readonly [string, (name: string, url: string) => boolean][] = [
  ["GC", (name) => name === "(garbage collector)"],
  ["node-postgres and the store", (_, url) => /node_modules\/(pg|pg-pool|pg-protocol)\/|\/libs\/store\//.test(url)],
  ["BullMQ", (_, url) => url.includes("node_modules/bullmq/")],
  ["RunSSE", (_, url) => /\/libs\/edge\/(src|dist)\/run-sse/.test(url)],
  ["BidiAppend and Connect", (_, url) => /\/libs\/edge\/(src|dist)\/(bidi-append|connect-edge)\.|node_modules\/@connectrpc\//.test(url)],
  ["the provider call (SDK, fetch, stream)", (_, url) => /node_modules\/(openai|@anthropic-ai|@aws-sdk|@smithy)\/|undici|\/libs\/providers\//.test(url)],
  ["snapshots", (_, url) => /\/libs\/(agent|protocol)\/(src|dist)\/(run\/)?(snapshots?|gate)\.[jt]s$/.test(url)],
  ["checkpoints and blobs", (_, url) => /\/libs\/protocol\/(src|dist)\/(checkpoint|blobs)\.[jt]s$/.test(url)],
  ["Redis", (_, url) => /node_modules\/ioredis\/|\/libs\/(redis|bus)\//.test(url)],
  ["the engine", (_, url) => /\/libs\/(agent|protocol)\//.test(url)],
  ["HTTP server", (_, url) => url.startsWith("node:_http_")],
  ["metering", (_, url) => url.includes("/libs/metering/")],
];

/**
 * An on-CPU `perf` recording: the share of each binary (the kernel's part is syscalls and
 * interrupts actually run, not time waiting in them) and the JavaScript functions by inclusive
 * on-CPU time.
 */
function summarizePerf(path: string): void {
  const report = (args: string[]) => execFileSync("perf", ["report", "-i", path, "--stdio", "-g", "none", ...args], { maxBuffer: 256 * 1024 * 1024, stdio: ["ignore", "pipe", "ignore"] }).toString().split("\n").filter((l) => l.trim() && !l.startsWith("#"));
  const short = (l: string) => l.replace(/(?:file:\/\/)?\/\S*?\/(libs|services|node_modules)\//, "$1/").replace(/\s+/g, " ").trim();
  console.log(`\nperf profile: ${path} (on-CPU samples of the measured turns)`);
  console.log(["", "| self | binary |", "|---|---|", ...report(["--no-children", "--sort", "dso"]).slice(0, 8).map((l) => { const [pct, ...rest] = short(l).split(" "); return `| ${pct} | ${rest.join(" ")} |`; })].join("\n"));
  console.log(["", "| inclusive | self | JavaScript function |", "|---|---|---|", ...report(["--children", "--sort", "sym"]).filter((l) => l.includes("JS:")).slice(0, TOP).map((l) => { const [incl, self, , ...rest] = short(l).split(" "); return `| ${incl} | ${self} | ${rest.join(" ").replaceAll("|", "\\|")} |`; })].join("\n"));
}

// BENCH_PROFILE_FILE: summarize existing profiles (comma-separated) instead of taking them.
const { paths, what } = process.env.BENCH_PROFILE_FILE ? { paths: process.env.BENCH_PROFILE_FILE.split(","), what: "existing profiles" } : await profileRun();
console.log(what);
for (const p of paths) (p.endsWith(".perf.data") ? summarizePerf : summarize)(p);
process.exit(0);
