// `npm run bench:idle-heap`: where the heap of idle RunSSE streams goes. Opens BENCH_IDLE_HEAP_STREAMS
// (2000) idle streams (as bench:scale does) on a fresh gateway (embedded) or ingress (distributed),
// takes a heap snapshot (after a full GC) with none and with them, and prints the growth per
// stream by owner (bytes of the objects each constructor or named closure dominates). Not a test.
//   BENCH_SCALE_MODES (embedded,distributed)  DATABASE_URL (local Postgres)
//   BENCH_DIST=1: the compiled build as the image runs it (npm run build first). Under
//   tsx every named closure carries its own property array (esbuild's keepNames `__name`,
//   256 B each), which the build has not.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { ClientRequest } from "node:http";
import { waitFor } from "@byok/testing";
import { holdIdleRunSse } from "@byok/testing";
import { benchGatewayEnv, startBenchSim } from "./scenarios.js";
import { distributedSetup, metric, spawnProc, startRedis, type Proc } from "./services.js";
import { round } from "./stats.js";

const N = Number(process.env.BENCH_IDLE_HEAP_STREAMS ?? 2_000);
const MODES = (process.env.BENCH_SCALE_MODES ?? "embedded,distributed").split(",");
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const TOP = Number(process.env.BENCH_IDLE_HEAP_TOP ?? 25);
/** BENCH_IDLE_HEAP_DEPTH > 1: owners as chains of that many labelled dominators, with the owned node's kind (to drill down). */
const DEPTH = Number(process.env.BENCH_IDLE_HEAP_DEPTH ?? 1);
const log = (s: string) => process.stderr.write(`[bench:idle-heap] ${s}\n`);

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Names that say nothing about who holds an object: its bytes go to the nearest dominator with a telling name. */
const ANONYMOUS = /^(Object|Array|system \/ .*|\(.*\)|)$/;

/**
 * Self sizes summed by owner: each node goes to its nearest dominator (itself included) that is
 * an object of a telling constructor or a named closure ("IncomingMessage", "closure runSse"),
 * found on the dominator tree (Cooper, Harvey & Kennedy), weak edges left out.
 */
function byOwner(file: string): Map<string, { bytes: number; count: number }> {
  const s = JSON.parse(readFileSync(file, "utf8")) as Snapshot;
  const nf = s.snapshot.meta.node_fields;
  const ef = s.snapshot.meta.edge_fields;
  const nodeTypes = s.snapshot.meta.node_types[0];
  const edgeTypes = s.snapshot.meta.edge_types[0];
  const [iType, iName, iSize, iEdges, nw] = [nf.indexOf("type"), nf.indexOf("name"), nf.indexOf("self_size"), nf.indexOf("edge_count"), nf.length];
  const [eType, eTo, ew] = [ef.indexOf("type"), ef.indexOf("to_node"), ef.length];
  const weak = edgeTypes.indexOf("weak");
  const n = s.nodes.length / nw;
  const firstEdge = new Uint32Array(n + 1);
  for (let i = 0; i < n; i++) firstEdge[i + 1] = firstEdge[i]! + s.nodes[i * nw + iEdges]! * ew;
  // Depth-first post order from the root (node 0), strong edges only.
  const post = new Int32Array(n).fill(-1);
  const order: number[] = [];
  const stack: number[] = [0];
  const next = new Uint32Array(n);
  const seen = new Uint8Array(n);
  seen[0] = 1;
  for (let i = 0; i < n; i++) next[i] = firstEdge[i]!;
  while (stack.length > 0) {
    const v = stack[stack.length - 1]!;
    let pushed = false;
    while (next[v]! < firstEdge[v + 1]!) {
      const e = next[v]!;
      next[v] = e + ew;
      if (s.edges[e + eType] === weak) continue;
      const w = s.edges[e + eTo]! / nw;
      if (seen[w]) continue;
      seen[w] = 1;
      stack.push(w);
      pushed = true;
      break;
    }
    if (!pushed) {
      stack.pop();
      post[v] = order.length;
      order.push(v);
    }
  }
  // Predecessors of reachable nodes.
  const preds: number[][] = Array.from({ length: n }, () => []);
  for (let v = 0; v < n; v++) {
    if (!seen[v]) continue;
    for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += ew) {
      if (s.edges[e + eType] === weak) continue;
      preds[s.edges[e + eTo]! / nw]!.push(v);
    }
  }
  const idom = new Int32Array(n).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (post[a]! < post[b]!) a = idom[a]!;
      while (post[b]! < post[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let k = order.length - 2; k >= 0; k--) {
      const v = order[k]!;
      let d = -1;
      for (const p of preds[v]!) if (idom[p] !== -1) d = d === -1 ? p : intersect(p, d);
      if (d !== -1 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  const label = (v: number): string | undefined => {
    const type = nodeTypes[s.nodes[v * nw + iType]!]!;
    const name = s.strings[s.nodes[v * nw + iName]!]!;
    if (type === "object" || type === "native") return ANONYMOUS.test(name) ? undefined : name;
    if (type === "closure") return name ? `closure ${name}` : undefined;
    return undefined;
  };
  // The labelled dominators of each node, nearest first, up to DEPTH of them.
  const owner = new Array<string>(n);
  const chain = new Array<string>(n);
  const out = new Map<string, { bytes: number; count: number }>();
  // Reverse post order visits a dominator before the nodes it dominates.
  for (let k = order.length - 1; k >= 0; k--) {
    const v = order[k]!;
    const own = label(v);
    owner[v] = own ?? (v === 0 ? "(root)" : owner[idom[v]!]!);
    chain[v] = v === 0 ? "(root)" : own === undefined ? chain[idom[v]!]! : `${own} < ${chain[idom[v]!]!}`.split(" < ").slice(0, DEPTH).join(" < ");
    const key = DEPTH > 1 ? `${chain[v]}${own === undefined ? ` : ${nodeTypes[s.nodes[v * nw + iType]!]} ${s.strings[s.nodes[v * nw + iName]!]!.slice(0, 30)}` : ""}` : owner[v];
    const e = out.get(key) ?? { bytes: 0, count: 0 };
    e.bytes += s.nodes[v * nw + iSize]!;
    e.count++;
    out.set(key, e);
  }
  return out;
}

async function snapshot(p: Proc, dir: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  p.child.kill("SIGUSR2");
  const file = await waitFor(async () => {
    const f = readdirSync(dir).find((x) => !before.has(x) && x.endsWith(".heapsnapshot"));
    // Written in one go; wait until the JSON parses (closing brace written).
    if (!f) return undefined;
    const t = readFileSync(join(dir, f), "utf8");
    return t.trimEnd().endsWith("}") ? join(dir, f) : undefined;
  }, 120_000, "heap snapshot");
  return file;
}

async function attribute(mode: string, p: Proc, dir: string, authToken?: string) {
  await new Promise((r) => setTimeout(r, 1_000));
  const base = byOwner(await snapshot(p, dir));
  const held: ClientRequest[] = [];
  try {
    for (let i = 0; i < N; i++) held.push(holdIdleRunSse(p.url, `bench-idle-${i}-${crypto.randomUUID()}`, authToken ? { authToken } : {}));
    await waitFor(async () => (await metric(p.url, "byok_run_sse_open")) >= N, 120_000, `${N} streams open`);
    await new Promise((r) => setTimeout(r, 2_000));
    const withStreams = byOwner(await snapshot(p, dir));
    const rows = [...new Set([...base.keys(), ...withStreams.keys()])].map((k) => {
      const a = base.get(k) ?? { bytes: 0, count: 0 };
      const b = withStreams.get(k) ?? { bytes: 0, count: 0 };
      return { what: k, bytesPerStream: round((b.bytes - a.bytes) / N, 1), countPerStream: round((b.count - a.count) / N, 2) };
    });
    rows.sort((x, y) => y.bytesPerStream - x.bytesPerStream);
    const total = rows.reduce((n, r) => n + r.bytesPerStream, 0);
    log(`${mode}: ${round(total / 1024, 2)} KiB per stream (snapshots after GC); bytes and heap objects per stream by owner:`);
    for (const r of rows.slice(0, TOP)) log(`  ${String(r.bytesPerStream).padStart(8)} B ${String(r.countPerStream).padStart(6)}  ${r.what}`);
    return { streams: N, kibPerStream: round(total / 1024, 2), top: rows.slice(0, TOP) };
  } finally {
    for (const r of held) r.destroy();
  }
}

/** BENCH_IDLE_HEAP_KEEP=1 keeps the snapshots (for DevTools' Memory tab). */
function drop(dir: string) {
  if (process.env.BENCH_IDLE_HEAP_KEEP === "1") log(`snapshots kept in ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}

const bs = await startBenchSim();
const env = {
  ...benchGatewayEnv(bs.sim.url),
  GATEWAY_NOT_FOUND_WAIT_MS: "900000",
  GATEWAY_HEARTBEAT_MS: "60000",
  GATEWAY_MAX_CONNECTIONS: String(N + 2_000),
  GATEWAY_MAX_RUN_SSE_STREAMS: String(N + 2_000),
};
const results: Record<string, unknown> = {};
if (MODES.includes("embedded")) {
  const dir = mkdtempSync(join(tmpdir(), "byok-idle-heap-"));
  const gw = await spawnProc("gateway", { ...env, GATEWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "byok-bench-pglite-")) }, ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${dir}`]);
  try {
    results.embedded = await attribute("embedded", gw, dir);
  } finally {
    await gw.kill();
    drop(dir);
  }
}
if (MODES.includes("distributed")) {
  const redis = await startRedis();
  const dir = mkdtempSync(join(tmpdir(), "byok-idle-heap-"));
  const d = await distributedSetup(env, redis.url, DATABASE_URL);
  const ingress = await spawnProc("ingress", d.env, ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${dir}`]);
  try {
    results.distributed = await attribute("distributed", ingress, dir, d.key);
  } finally {
    await ingress.kill();
    await redis.stop();
    await d.drop();
    drop(dir);
  }
}
await bs.sim.close();
console.log(JSON.stringify({ loadavg: loadavg().map((l) => round(l)), results }, null, 2));
process.exit(0);
