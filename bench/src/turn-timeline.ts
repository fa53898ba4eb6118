// `npm run bench:timeline`: one unloaded turn of the distributed deployment (1 ingress + 1 worker,
// private redis-server, private Postgres schema behind the statement counter), as a timeline:
// every Redis command (MONITOR; a script's own calls are counted, not listed) and every store
// statement, by process, from the client's first byte to the end of the turn, plus the client's
// and the provider simulator's milestones. It then counts the worker's round trips from taking
// the job to the run's first output frame and to the provider request: what "run start makes
// the fewest round trips it can" is measured by (docs/benchmarks.md "First text and run start"). Not a test.
//   BENCH_TIMELINE_TURNS (1: turns traced after the warm-up, each printed)  BENCH_TIMELINE_DUMP (a file: every command, appended)  DATABASE_URL
import { execSync } from "node:child_process";
import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { createCursorClient, nodeHttpTransport, runRequestMessage } from "@byok/testing";
import { startPgCounter } from "./pg-count.js";
import { benchGatewayEnv, MODEL, runTurns, SCRIPTS, startBenchSim } from "./scenarios.js";
import { distributedSetup, spawnProc, startRedis, type Proc } from "./services.js";

const TURNS = Number(process.env.BENCH_TIMELINE_TURNS ?? 1);
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
/** Commands of one process closer together than this went out in one write (pipelined or coalesced): one round trip. */
const SAME_TRIP_MS = 0.3;

interface Row {
  /** Unix ms. */
  at: number;
  who: string;
  what: string;
  /** Redis commands this row ran (a script: itself plus its calls). */
  commands: number;
}

const nowUnixMs = () => performance.timeOrigin + performance.now();

/** Our Lua scripts by SHA-1, so EVALSHA rows read as script names. */
function scriptNames(): Map<string, string> {
  const names = new Map<string, string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.name === "node_modules" || e.name === "dist") continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".lua")) names.set(createHash("sha1").update(readFileSync(p)).digest("hex"), e.name.replace(/\.lua$/, ""));
    }
  };
  walk("libs");
  return names;
}

/** Which gateway process owns each local TCP port connected to `port` (from `ss`, run as the same user). */
function portOwners(port: number, labels: Map<number, string>): Map<number, string> {
  const owners = new Map<number, string>();
  const out = execSync(`ss -Htnp state established '( dport = :${port} )'`).toString();
  for (const line of out.split("\n")) {
    const local = /\S+:(\d+)\s+\S+:\d+/.exec(line);
    const pid = /pid=(\d+)/.exec(line);
    const label = pid ? labels.get(Number(pid[1])) : undefined;
    if (local && label) owners.set(Number(local[1]), label);
  }
  return owners;
}

const bs = await startBenchSim();
const redis = await startRedis();
const pgRows: Array<{ at: number; port: number; kind: string }> = [];
let tracing = false;
const pgc = await startPgCounter(DATABASE_URL, (kind, port) => {
  if (tracing) pgRows.push({ at: nowUnixMs(), port, kind });
});
const { env, key, drop } = await distributedSetup(benchGatewayEnv(bs.sim.url), redis.url, DATABASE_URL, pgc.url);
const procs: Proc[] = [];
const names = scriptNames();
try {
  const [ingress, worker] = await Promise.all([spawnProc("ingress", env), spawnProc("worker", env)]);
  procs.push(ingress, worker);
  const labels = new Map([[ingress.pid, "ingress"], [worker.pid, "worker"]]);
  await runTurns(bs, [ingress.url], 5, "ttft", 0, key); // warm-up: connections, caches, JIT
  await new Promise((r) => setTimeout(r, 500));
  const client = createCursorClient({ baseUrl: ingress.url, transport: nodeHttpTransport(), authToken: key });
  const summaries: string[] = [];
  for (let t = 0; t < TURNS; t++) {
    const monitor = await new Redis(redis.url).monitor();
    const redisRows: Array<{ at: number; port: number; args: string[]; lua: boolean }> = [];
    monitor.on("monitor", (time: string, args: string[], source: string) => {
      redisRows.push({ at: Number(time) * 1000, port: Number(source.split(":").at(-1)), args, lua: source === "lua" });
    });
    await new Promise((r) => setTimeout(r, 100));
    pgRows.length = 0;
    tracing = true;
    const tag = `bench-ttft-${randomUUID()}`;
    const milestones: Row[] = [];
    const mark = (what: string, at = nowUnixMs()) => milestones.push({ at, who: "client", what, commands: 0 });
    const startedAt = nowUnixMs();
    mark("turn starts (RunSSE + BidiAppend of the run request)", startedAt);
    let firstFrame = false;
    let firstText = false;
    const r = await client.runTurn({
      requestId: `${tag}-r`,
      message: runRequestMessage({ text: tag, conversationId: `${tag}-c`, modelId: MODEL }),
      onMessage: (m) => {
        if (!firstFrame) mark(`first frame (${m.message.case})`);
        firstFrame = true;
        if (!firstText && m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta") {
          firstText = true;
          mark("first text_delta");
        }
      },
    });
    mark(`turn ended (${r.end?.ok ? "ok" : (r.end?.code ?? "truncated")})`);
    await new Promise((r) => setTimeout(r, 300));
    tracing = false;
    monitor.disconnect();
    const answered = bs.answeredAt.get(tag);
    if (answered !== undefined) milestones.push({ at: performance.timeOrigin + answered, who: "provider", what: "request received (simulator answers)", commands: 0 }, { at: performance.timeOrigin + answered + (SCRIPTS.ttft!.chunkDelayMs ?? 0), who: "provider", what: "first text chunk written", commands: 0 });

    const redisOwners = portOwners(redis.port, labels);
    // BENCH_TIMELINE_DUMP=<file>: every command of the turn, a script's own calls included, one per line.
    if (process.env.BENCH_TIMELINE_DUMP) {
      const lines = redisRows.map((c) => `${(c.at - startedAt).toFixed(1)} ${c.lua ? "lua" : (redisOwners.get(c.port) ?? c.port)} ${c.args.map((a) => (a.length > 80 ? `${a.slice(0, 80)}…` : a)).join(" ")}`);
      appendFileSync(process.env.BENCH_TIMELINE_DUMP, `${lines.join("\n")}\n`);
    }
    const pgOwners = portOwners(Number(new URL(pgc.url).port), labels);
    const rows: Row[] = [...milestones];
    let last: Row | undefined;
    for (const c of redisRows) {
      if (c.lua) {
        if (last) last.commands++;
        continue;
      }
      const cmd = c.args[0]!.toLowerCase();
      const script = cmd === "evalsha" ? (names.get(c.args[1]!) ?? `bullmq ${c.args[3]?.split(":").at(-1) ?? ""}`) : undefined;
      const keyArg = cmd === "evalsha" ? undefined : c.args[1];
      const keyKind = keyArg ? keyArg.replace(/\{[^}]*\}/g, "{…}").replace(/[0-9a-f-]{36}\S*/g, "…") : "";
      last = { at: c.at, who: redisOwners.get(c.port) ?? `redis client :${c.port}`, what: script ? `redis script ${script}` : `redis ${cmd} ${keyKind}`.trim(), commands: 1 };
      rows.push(last);
    }
    for (const s of pgRows) rows.push({ at: s.at, who: pgOwners.get(s.port) ?? `pg client :${s.port}`, what: `store ${s.kind}`, commands: 0 });
    rows.sort((a, b) => a.at - b.at);
    // Periodic work of an idle deployment (presence, stalled-job checks) is not the turn's: shown, marked.
    const periodic = /release-dead-workers|bullmq stalled|bullmq.*marker|bzpopmin|lrange byok:ledger-spool/;
    console.log(`\nturn ${t + 1}: ${r.end?.ok ? "ok" : "not ok"}, ${r.messages.length} frames`);
    console.log("| ms | process | what | Redis commands |\n|---|---|---|---|");
    let shown = 0;
    for (const row of rows) {
      if (row.at - startedAt > 150 && !/client|provider/.test(row.who) && !/end-output|append-output|save-snapshot/.test(row.what)) continue; // the streaming middle: summarized below
      if (shown++ > 80) break;
      console.log(`| ${(row.at - startedAt).toFixed(1)} | ${row.who} | ${row.what}${periodic.test(row.what) ? " (periodic)" : ""} | ${row.commands || ""} |`);
    }
    // Every command of the turn by process and kind (script or command), the streaming middle included.
    const byKind = new Map<string, { calls: number; commands: number }>();
    for (const row of rows) {
      if (!row.commands) continue;
      const k = `${row.who} | ${row.what.replace(/ byok:req:\{…\}:g\d+:/, " :").replace(/ byok:(\S*)\{…\}\S*/, " $1")}${periodic.test(row.what) ? " (periodic)" : ""}`;
      const e = byKind.get(k) ?? { calls: 0, commands: 0 };
      e.calls++;
      e.commands += row.commands;
      byKind.set(k, e);
    }
    console.log("\n| process | what | calls | Redis commands |\n|---|---|---|---|");
    for (const [k, e] of [...byKind].sort((a, b) => b[1].commands - a[1].commands)) console.log(`| ${k} | ${e.calls} | ${e.commands} |`);
    // The worker's round trips from its first command of the run to the first output append and to the provider request.
    const workerRows = rows.filter((x) => x.who === "worker" && !periodic.test(x.what));
    const firstAppend = workerRows.find((x) => /append-output|redis xadd byok:req/.test(x.what));
    const providerAt = milestones.find((m) => m.who === "provider")?.at;
    const trips = (until: number | undefined) => {
      let n = 0;
      let prev = -Infinity;
      for (const x of workerRows) {
        if (until !== undefined && x.at >= until) break;
        if (x.at - prev > SAME_TRIP_MS) n++;
        prev = x.at;
      }
      return n;
    };
    const turnCommands = rows.filter((x) => !periodic.test(x.what)).reduce((a, x) => a + x.commands, 0);
    const summary = {
      turn: t + 1,
      frames: r.messages.length,
      workerRoundTripsBeforeFirstFrame: firstAppend ? trips(firstAppend.at) - 1 : Number.NaN,
      workerRoundTripsBeforeProviderRequest: trips(providerAt),
      msToFirstFrame: firstAppend ? Math.round((firstAppend.at - startedAt) * 10) / 10 : Number.NaN,
      msToProviderRequest: providerAt ? Math.round((providerAt - startedAt) * 10) / 10 : Number.NaN,
      /** The provider's first text chunk written → the client's first text_delta (the TTFT overhead of this one turn). */
      msFirstTextChunkToClient: ((a, b) => (a && b ? Math.round((b.at - a.at) * 10) / 10 : Number.NaN))(
        milestones.find((m) => m.what === "first text chunk written"),
        milestones.find((m) => m.what === "first text_delta"),
      ),
      redisCommandsOfTheTurn: turnCommands,
      storeStatementsOfTheTurn: pgRows.length,
    };
    summaries.push(JSON.stringify(summary));
  }
  console.log(`\n${summaries.join("\n")}`);
} finally {
  for (const p of procs) await p.kill("SIGTERM").catch(() => undefined);
  await redis.stop();
  await pgc.close();
  await drop();
  await bs.sim.close();
}
process.exit(0);
