// `npm run bench:store`: the latency of each store call a turn makes, one call at a time, on
// PGlite (the embedded gateway's store, on this process's store thread as there) and on Postgres
// (a private schema of DATABASE_URL): what a turn's store work costs the process that runs it. In
// embedded mode PGlite runs on a thread of the gateway's process (docs/architecture.md "The
// embedded store's thread"), so its milliseconds are still the gateway's CPU, off its event loop.
// Per call: p50 and mean wall ms, `xClaim` (p50 over claimRun's p50 in the same run: the machine's
// speed moves between runs, ratios within one run compare), and `cpuUs`, the mean process CPU
// (user + system, process.cpuUsage) the call cost: for PGlite everything, for Postgres the client's share.
// Not a test.   BENCH_STORE_TURNS (300)  DATABASE_URL
import { createHash, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { createStore, type GatewayStore } from "@byok/store";
import { percentile, round } from "./stats.js";

const TURNS = Number(process.env.BENCH_STORE_TURNS ?? 300);
const WARMUP = 50;
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** The store calls of one turn, in the order a turn makes them; ms per call, by name. */
async function turns(store: GatewayStore): Promise<Record<string, { p50: number; mean: number; xClaim: number; cpuUs: number }>> {
  const samples = new Map<string, { ms: number[]; cpuUs: number[] }>();
  const time = async <T>(name: string, call: () => Promise<T>, keep: boolean): Promise<T> => {
    const cpu = process.cpuUsage();
    const start = performance.now();
    const out = await call();
    const ms = performance.now() - start;
    const used = process.cpuUsage(cpu);
    if (keep) {
      const s = samples.get(name) ?? { ms: [], cpuUs: [] };
      s.ms.push(ms);
      s.cpuUs.push(used.user + used.system);
      samples.set(name, s);
    }
    return out;
  };
  for (let i = 0; i < WARMUP + TURNS; i++) {
    const keep = i >= WARMUP;
    const tenant = "bench";
    const conv = randomUUID();
    const requestId = randomUUID();
    const fence = { requestId, generation: 1, epoch: 1 };
    const entry = (kind: string, body: Record<string, unknown>) => ({ tenantId: tenant, conversationId: conv, requestId, generation: 1, turn: 0, kind, body, interrupted: false });
    const blob = Buffer.from(`turn ${i} `.repeat(60));
    const several = [0, 1, 2, 3].map((k) => Buffer.from(`turn ${i} blob ${k} `.repeat(512)));
    await time("claimRun", () => store.claimRun(tenant, fence), keep);
    await time("listHistory", () => store.listHistory(tenant, conv), keep);
    await time("latestCheckpoint", () => store.latestCheckpoint(tenant, conv), keep);
    // A run's start: the user's entry with its checkpoint's blob, one statement.
    const startBlob = Buffer.from(`start ${i} `.repeat(60));
    await time("appendHistory (user, with a blob)", () => store.appendHistory([entry("user", { text: "hello", dedupeKey: "u" })], fence, { blobs: [{ id: createHash("sha256").update(startBlob).digest(), data: startBlob }] }), keep);
    // A pass's history read, which also touches the conversation.
    await time("listHistory (1 entry, touching)", () => store.listHistory(tenant, conv, { lastRequestId: requestId }), keep);
    await time("putBlobs", () => store.putBlobs(tenant, [{ id: createHash("sha256").update(blob).digest(), data: blob }]), keep);
    await time("putBlobs (4 x ~8 KiB)", () => store.putBlobs(tenant, several.map((data) => ({ id: createHash("sha256").update(data).digest(), data }))), keep);
    await time("saveCheckpoint", () => store.saveCheckpoint({ tenantId: tenant, conversationId: conv, requestId, generation: 1, state: Buffer.alloc(800, 1) }, fence), keep);
    await time("latestCheckpoint (800 B)", () => store.latestCheckpoint(tenant, conv), keep);
    await time("appendHistory (assistant)", () => store.appendHistory([entry("assistant", { text: "t ".repeat(60), dedupeKey: "a" })], fence), keep);
    await time("ledger.record", () => store.ledger.record({
      tenantId: tenant, userId: "u", keyId: "k", conversationId: conv, requestId, originalRequestId: requestId, generation: 1, epoch: 1, modelCallId: "m1", attempt: 1,
      provider: "openai-chat", upstreamModel: "bench-model", route: "bench", credentialsSource: "gateway", rawUsage: { prompt_tokens: 10, completion_tokens: 60 },
      inputTokens: 10, outputTokens: 60, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: false, priceVersion: 1, costMicroUsd: 42,
      ttftMs: 120, ttftOverheadUs: 900, durationMs: 3000, outcome: "ok",
    }), keep);
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const claimP50 = percentile(samples.get("claimRun")!.ms, 50);
  return Object.fromEntries(
    [...samples].map(([name, { ms, cpuUs }]) => [
      name,
      { p50: round(percentile(ms, 50), 3), mean: round(mean(ms), 3), xClaim: round(percentile(ms, 50) / claimP50, 2), cpuUs: Math.round(mean(cpuUs)) },
    ]),
  );
}

const dir = mkdtempSync(join(tmpdir(), "byok-bench-store-"));
const schema = `bench_store_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
const out: Record<string, unknown> = { turns: TURNS };
try {
  const pglite = await createStore({ driver: "pglite", dataDir: dir });
  try {
    out.pglite = await turns(pglite);
  } finally {
    await pglite.close();
  }
  const postgres = await createStore({ driver: "postgres", url: DATABASE_URL, schema });
  try {
    out.postgres = await turns(postgres);
  } finally {
    await postgres.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  await client.query(`drop schema if exists "${schema}" cascade`);
  await client.end();
}
console.log(JSON.stringify(out, null, 2));
