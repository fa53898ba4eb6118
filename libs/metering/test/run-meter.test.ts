// The run meter over the in-memory guard and limiter (embedded mode) and the Redis ones
// (distributed mode, one node; the Redis Cluster in metering-cluster.test.ts), with a real
// store (PGlite): an unpriced model is refused under a tenant's or a user's cost budget
// (failed_precondition naming the model; docs/tenancy.md), and tokens-per-minute windows
// count what an attempt settles, so the next run start of the minute is refused.
import { randomBytes, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AttemptInfo } from "@byok/agent";
import { endFor } from "@byok/protocol";
import { createStore, type GatewayStore } from "@byok/store";
import {
  createMemoryBudgetGuard, createMemoryRateLimiter, createRedisBudgetGuard, createRedisRateLimiter, createRunMeter,
  type BudgetGuard, type RateLimiter,
} from "../src/index.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
/** One pinned minute: no window boundary falls between a settle and the refused start. */
const PINNED = new Date("2030-01-01T00:00:30Z");

interface Guards {
  budgets: BudgetGuard;
  rates: RateLimiter;
  close(): Promise<void>;
}

const redisPrefixes: string[] = [];
const kinds: [string, (store: GatewayStore) => Guards][] = [
  [
    "memory",
    (store) => {
      const budgets = createMemoryBudgetGuard({ loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) });
      const rates = createMemoryRateLimiter();
      return { budgets, rates, close: async () => { await budgets.close(); await rates.close(); } };
    },
  ],
  [
    "redis",
    (store) => {
      const prefix = `run-meter-test-${randomBytes(6).toString("hex")}`;
      redisPrefixes.push(prefix);
      const budgets = createRedisBudgetGuard({ redis: { target: REDIS_URL }, prefix, loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) });
      const rates = createRedisRateLimiter({ redis: { target: REDIS_URL }, prefix });
      return { budgets, rates, close: async () => { await budgets.close(); await rates.close(); } };
    },
  ],
];

let store: GatewayStore;
beforeAll(async () => {
  store = await createStore({ driver: "pglite", dataDir: undefined });
});
afterAll(async () => {
  await store?.close();
  const admin = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
  for (const p of redisPrefixes) {
    for (let cursor = "0"; ; ) {
      const [next, keys] = await admin.scan(cursor, "MATCH", `${p}:*`, "COUNT", 500);
      if (keys.length > 0) await admin.del(...keys);
      if ((cursor = next) === "0") break;
    }
  }
  await admin.quit();
});

function attempt(tenantId: string, opts: { userId?: string; credentialsSource?: "gateway" | "client"; model?: string } = {}): AttemptInfo {
  const requestId = `r-${randomUUID().slice(0, 8)}`;
  return {
    ref: { tenantId, requestId },
    generation: 1,
    conversationId: `conv-${requestId}`,
    modelCallId: "mc-1",
    attempt: 1,
    principal: { userId: opts.userId, keyId: "key-1", originalRequestId: undefined, ghostMode: false },
    modelId: "route-m",
    provider: "openai-chat",
    upstreamModel: opts.model ?? "unpriced-upstream",
    credentialsSource: opts.credentialsSource ?? "gateway",
    estimatedInputTokens: 10,
    maxOutputTokens: 10,
  };
}

describe.each(kinds)("run meter (%s guard and limiter)", (_kind, open) => {
  let g: Guards;
  beforeAll(() => {
    g = open(store);
  });
  afterAll(async () => g.close());
  const meter = () => createRunMeter({ store, budgets: g.budgets, rates: g.rates, now: () => PINNED });
  const tenantWith = async (limits: Record<string, unknown>) => {
    const tenantId = `t-${randomUUID().slice(0, 8)}`;
    await store.tenants.create({ tenantId, name: tenantId, limits });
    return tenantId;
  };

  it("refuses an unpriced model under the tenant's cost budget: failed_precondition naming the model and the price command", async () => {
    const tenantId = await tenantWith({ tenant: { monthlyCostMicroUsd: 1_000_000 } });
    const r = await meter().admitAttempt(attempt(tenantId));
    expect(r).toMatchObject({ ok: false, error: { kind: "unpriced_model" } });
    if (r.ok) return;
    expect(endFor(r.error)).toMatchObject({ ok: false, code: "failed_precondition" });
    expect(r.error.message).toContain("unpriced-upstream");
    expect(r.error.message).toContain("price set openai-chat unpriced-upstream");
  });

  it("refuses an unpriced model under a user's cost budget (the tenant's per-user default, or the user's own)", async () => {
    const perUser = await tenantWith({ perUser: { monthlyCostMicroUsd: 1_000_000 } });
    expect(await meter().admitAttempt(attempt(perUser, { userId: "u-1" }))).toMatchObject({ ok: false, error: { kind: "unpriced_model" } });
    const own = await tenantWith({});
    await store.tenants.createUser({ tenantId: own, userId: "u-2", limits: { monthlyCostMicroUsd: 1_000_000 } });
    expect(await meter().admitAttempt(attempt(own, { userId: "u-2" }))).toMatchObject({ ok: false, error: { kind: "unpriced_model" } });
    // Another user of the same tenant has no cost budget: the model runs for them (and costs 0).
    await store.tenants.createUser({ tenantId: own, userId: "u-3" });
    const free = await meter().admitAttempt(attempt(own, { userId: "u-3" }));
    expect(free.ok).toBe(true);
    if (free.ok) await meter().settleAttempt(attempt(own, { userId: "u-3" }), free.ticket, { outcome: "ok", usage: usage(3), ttftMs: 1, ttftOverheadUs: undefined, durationMs: 2 });
  });

  it("admits an unpriced model without a cost budget, and on the client's own credentials under one", async () => {
    const tokensOnly = await tenantWith({ tenant: { monthlyTokens: 1_000_000 } });
    expect((await meter().admitAttempt(attempt(tokensOnly))).ok).toBe(true);
    const budgeted = await tenantWith({ tenant: { monthlyCostMicroUsd: 1_000_000 } });
    expect((await meter().admitAttempt(attempt(budgeted, { credentialsSource: "client" }))).ok).toBe(true);
  });

  it("counts the tokens an attempt settles against the tokens-per-minute limit: the next run start of the minute is refused", async () => {
    const tenantId = await tenantWith({ rate: { tokensPerMinute: 4_000 } });
    const m = meter();
    const principal = { userId: undefined, keyId: "key-1", originalRequestId: undefined, ghostMode: false };
    expect(await m.admitRun({ tenantId, requestId: "run-1" }, principal)).toEqual({ ok: true });
    const a = attempt(tenantId, { credentialsSource: "client" });
    const admitted = await m.admitAttempt(a);
    if (!admitted.ok) throw new Error("attempt refused");
    // The estimate (20 tokens) is far below the limit: runs still start.
    expect(await m.admitRun({ tenantId, requestId: "run-2" }, principal)).toEqual({ ok: true });
    await m.settleAttempt(a, admitted.ticket, { outcome: "ok", usage: usage(4_500), ttftMs: 5, ttftOverheadUs: undefined, durationMs: 10 });
    const refused = await m.admitRun({ tenantId, requestId: "run-3" }, principal);
    expect(refused).toMatchObject({ ok: false, error: { kind: "rate_limited" } });
    if (!refused.ok) expect(refused.error.message).toContain("4,000 tokens per minute");
  });

  it("counts an attempt settled twice (by its owner, then by the worker that took the run over) once toward tokens per minute", async () => {
    const tenantId = await tenantWith({ rate: { tokensPerMinute: 4_000 } });
    const principal = { userId: undefined, keyId: "key-1", originalRequestId: undefined, ghostMode: false };
    const a = attempt(tenantId, { credentialsSource: "client" });
    const admitted = await meter().admitAttempt(a);
    if (!admitted.ok) throw new Error("attempt refused");
    // 2 500 tokens, settled by the owner and again by the taker with the ticket from the snapshot.
    const result = { outcome: "ok" as const, usage: usage(2_500), ttftMs: 5, ttftOverheadUs: undefined, durationMs: 10 };
    await meter().settleAttempt(a, admitted.ticket, result);
    await meter().settleAttempt(a, JSON.parse(JSON.stringify(admitted.ticket)), result);
    // Counted twice it would be 5 000 of 4 000 and refuse the next start.
    expect(await meter().admitRun({ tenantId, requestId: "run-after" }, principal)).toEqual({ ok: true });
  });
});

function usage(inputTokens: number) {
  return { inputTokens, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: false, raw: {} };
}
