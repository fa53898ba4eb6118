/**
 * Usage recorded through a real Postgres outage (a private cluster, stopped with an immediate
 * shutdown and started again): the run meter holds the ledger rows the unreachable database
 * could not take — in memory (embedded mode) and in Redis (distributed mode, where another
 * process drains them) — and writes each exactly once when the database is back, dated when the
 * attempt ended. A full spool loses the row and says so.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AttemptInfo, AttemptResult } from "@byok/agent";
import { createStore, type GatewayStore, type LedgerEntry } from "@byok/store";
import { startPostgresServer, waitFor, type PrivatePostgres } from "@byok/testing";
import {
  createMemoryBudgetGuard, createMemoryLedgerSpool, createMemoryRateLimiter, createRedisLedgerSpool, createRunMeter, type LedgerSpool,
} from "../src/index.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

const principal = { userId: "u1", keyId: "key-1", originalRequestId: undefined, ghostMode: true };
const attemptOf = (tenantId: string, requestId: string, attempt: number): AttemptInfo => ({
  ref: { tenantId, requestId }, generation: 1, conversationId: `c-${requestId}`, modelCallId: "mc-1", attempt, principal, modelId: "m",
  provider: "openai-chat", upstreamModel: "sim-model", credentialsSource: "gateway", estimatedInputTokens: 10, maxOutputTokens: 10,
});
const result = (outcome: AttemptResult["outcome"], outputTokens: number): AttemptResult => ({
  outcome,
  usage: { inputTokens: 12, outputTokens, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: false, raw: { prompt_tokens: 12, completion_tokens: outputTokens } },
  ttftMs: 5,
  ttftOverheadUs: undefined,
  durationMs: 40,
});

describe("the ledger spool through a real Postgres outage", () => {
  let pg: PrivatePostgres;
  let store: GatewayStore;
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
  const prefix = `spool-test-${randomBytes(6).toString("hex")}`;
  beforeAll(async () => {
    pg = await startPostgresServer();
    store = await createStore({ driver: "postgres", url: pg.url, schema: `t_spool_${randomBytes(4).toString("hex")}`, maxConnections: 4 });
    // The migrations survive the immediate shutdowns below.
    await pg.checkpoint();
  }, 120_000);
  afterAll(async () => {
    await store?.close().catch(() => undefined);
    await pg?.destroy();
    await redis.del(`${prefix}:ledger-spool`);
    await redis.quit();
  });

  /** A meter over the test store with `spool`, and what it reported. */
  const meterWith = (spool: LedgerSpool) => {
    const seen = { spool: [] as string[], recorded: [] as LedgerEntry[], errors: [] as string[] };
    const meter = createRunMeter({
      store,
      budgets: createMemoryBudgetGuard({ loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) }),
      rates: createMemoryRateLimiter(),
      spool: { spool, drainEveryMs: 100 },
      onSpool: (outcome) => void seen.spool.push(outcome),
      onRecorded: (e) => void seen.recorded.push(e),
      onError: (_err, where) => void seen.errors.push(where),
    });
    return { meter, seen };
  };
  const admitted = async (meter: ReturnType<typeof createRunMeter>, a: AttemptInfo) => {
    const r = await meter.admitAttempt(a);
    if (!r.ok) throw new Error(`not admitted: ${r.error.message}`);
    return r.ticket;
  };

  it("embedded mode: rows held in memory during the outage are written once when it is back; a full spool loses the row", async () => {
    const tenant = `mem-${randomBytes(3).toString("hex")}`;
    const spool = createMemoryLedgerSpool({ maxRows: 2 });
    const { meter, seen } = meterWith(spool);
    const a1 = attemptOf(tenant, "r1", 1);
    const a2 = attemptOf(tenant, "r1", 2);
    const a3 = attemptOf(tenant, "r2", 1);
    const t1 = await admitted(meter, a1);
    const t2 = await admitted(meter, a2);
    const t3 = await admitted(meter, a3);

    await pg.stop();
    const endedAt = Date.now();
    // The attempts end while the database is down: settle does not fail, the rows are held.
    await meter.settleAttempt(a1, t1, result("retried", 3));
    await meter.settleAttempt(a2, t2, result("ok", 7));
    expect(await spool.size()).toBe(2);
    // The spool is full: the third row is lost, and settle fails as before the spool existed.
    await expect(meter.settleAttempt(a3, t3, result("ok", 1))).rejects.toThrow();
    expect(seen.spool).toEqual(["held", "held", "lost"]);
    // Draining while it is still down writes nothing and keeps both rows.
    expect(await meter.drainSpool()).toEqual({ recorded: 0, left: 2 });

    await pg.start();
    await waitFor(async () => (await spool.size()) === 0, 30_000, "the spool drained");
    const rows = await store.ledger.forRequest(tenant, "r1");
    expect(rows.map((r) => [r.attempt, r.outcome, r.outputTokens])).toEqual([[1, "retried", 3], [2, "ok", 7]]);
    // Dated when the attempt ended, not when the drain wrote it.
    for (const r of rows) expect(Math.abs(r.createdAt.getTime() - endedAt)).toBeLessThan(60_000);
    expect(await store.ledger.forRequest(tenant, "r2")).toEqual([]);
    expect(seen.recorded.map((e) => e.attempt)).toEqual([1, 2]);
    expect(seen.spool.filter((o) => o === "recorded")).toHaveLength(2);
    await spool.close();
  }, 120_000);

  it("distributed mode: rows held in Redis by one process are written by another once the database is back, each exactly once", async () => {
    const tenant = `redis-${randomBytes(3).toString("hex")}`;
    const holderSpool = createRedisLedgerSpool({ redis: { target: REDIS_URL }, prefix, maxRows: 100 });
    const holder = meterWith(holderSpool);
    const a1 = attemptOf(tenant, "r1", 1);
    const a2 = attemptOf(tenant, "r2", 1);
    const t1 = await admitted(holder.meter, a1);
    const t2 = await admitted(holder.meter, a2);

    await pg.stop();
    await holder.meter.settleAttempt(a1, t1, result("ok", 4));
    await holder.meter.settleAttempt(a2, t2, result("failed", 0));
    // The same attempt settled again (a takeover re-recording it) while still down: held twice, one row in the end.
    await holder.meter.settleAttempt(a1, t1, result("ok", 4));
    expect(await redis.llen(holderSpool.key)).toBe(3);
    expect(holder.seen.spool).toEqual(["held", "held", "held"]);
    // The holding process goes away; its rows stay in Redis.
    await holderSpool.close();

    const drainerSpool = createRedisLedgerSpool({ redis: { target: REDIS_URL }, prefix, maxRows: 100 });
    const drainer = meterWith(drainerSpool);
    await pg.start();
    await waitFor(async () => (await redis.llen(holderSpool.key)) === 0, 30_000, "the Redis spool drained");
    expect((await store.ledger.forRequest(tenant, "r1")).map((r) => [r.attempt, r.outcome, r.outputTokens])).toEqual([[1, "ok", 4]]);
    expect((await store.ledger.forRequest(tenant, "r2")).map((r) => [r.attempt, r.outcome])).toEqual([[1, "failed"]]);
    // Counted once each (the repeat wrote nothing new).
    expect(drainer.seen.recorded.map((e) => e.requestId).sort()).toEqual(["r1", "r2"]);
    // The repeat was held but wrote no row: `recorded` counts rows written.
    expect(drainer.seen.spool).toEqual(["recorded", "recorded"]);
    expect(drainer.seen.errors).toEqual([]);
    await drainerSpool.close();
  }, 120_000);
});
