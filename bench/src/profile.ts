// `npm run bench:profile`: the embedded gateway under `node --cpu-prof` while it serves the
// paced TTFT scenario (BENCH_TURNS concurrent turns), then the profile's top frames by self time
// and the same grouped by package. The raw .cpuprofile stays in the printed directory (open it
// in Chrome DevTools or speedscope for the flame graph). Not a test.
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchGatewayEnv, runTurns, startBenchSim } from "./scenarios.js";
import { spawnProc } from "./services.js";

const TURNS = Number(process.env.BENCH_TURNS ?? 200);
const RAMP_MS = Number(process.env.BENCH_RAMP_MS ?? 2_500);
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 25);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Runs the scenario under --cpu-prof; returns the profile's path and a one-line summary. */
async function profileRun(): Promise<{ path: string; what: string }> {
  const bs = await startBenchSim();
  const dir = mkdtempSync(join(tmpdir(), "byok-cpuprof-"));
  const gw = await spawnProc(
    "gateway",
    { ...benchGatewayEnv(bs.sim.url), GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "byok-bench-pglite-")) },
    ["--cpu-prof", "--cpu-prof-dir", dir],
  );
  await runTurns(bs, [gw.url], 20, "ttft"); // warm-up
  const r = await runTurns(bs, [gw.url], TURNS, "ttft", RAMP_MS);
  await gw.kill("SIGTERM"); // a clean exit writes the profile
  await bs.sim.close();
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) throw new Error(`no .cpuprofile in ${dir}`);
  return { path: join(dir, file), what: `${TURNS} paced turns, ${r.ok} ok, ${r.frames} frames` };
}

// BENCH_PROFILE_FILE: summarize an existing profile instead of taking one.
const { path, what } = process.env.BENCH_PROFILE_FILE ? { path: process.env.BENCH_PROFILE_FILE, what: "existing profile" } : await profileRun();
const prof = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
const selfUs = new Map<number, number>();
prof.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const byFrame = new Map<string, number>();
const byPackage = new Map<string, number>();
for (const n of prof.nodes) {
  const us = selfUs.get(n.id) ?? 0;
  if (!us) continue;
  const { functionName, url, lineNumber } = n.callFrame;
  const where = url.replace(/^file:\/\//, "").replace(/^.*?\/(node_modules|libs|services)\//, "$1/");
  byFrame.set(`${functionName || "(anonymous)"} ${where}:${lineNumber + 1}`, (byFrame.get(`${functionName || "(anonymous)"} ${where}:${lineNumber + 1}`) ?? 0) + us);
  const pkg = url.startsWith("wasm://") ? "@electric-sql/pglite (wasm)" : url === "" ? `native: ${functionName.startsWith("(") ? functionName : "I/O and builtins"}` : /node_modules\/(@[^/]+\/[^/]+|[^/]+)/.exec(where)?.[1] ?? /^(libs\/[^/]+|services\/[^/]+)/.exec(where)?.[1] ?? (url.startsWith("node:") ? "node core" : functionName.startsWith("(") ? functionName : "other");
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
}
const pct = (us: number) => `${((us * 100) / total).toFixed(1)}%`;
const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, us]) => `| ${pct(us)} | ${k.replaceAll("|", "\\|")} |`);
console.log(`profile: ${path} · ${what}, ${(total / 1e6).toFixed(2)} s sampled (whole process life, start-up included)`);
console.log(["", "| self | frame |", "|---|---|", ...top(byFrame, TOP)].join("\n"));
console.log(["", "| self | package |", "|---|---|", ...top(byPackage, 15)].join("\n"));
process.exit(0);
