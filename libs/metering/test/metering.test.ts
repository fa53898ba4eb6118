/** Runs the budget and rate contracts on the in-memory and Redis implementations. */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { endFor } from "@byok/protocol";
import { createStore } from "@byok/store";
import { createMemoryBudgetGuard, createMemoryRateLimiter, createRedisBudgetGuard, createRedisRateLimiter, createRunMeter, type LoadMonthTotals } from "../src/index.js";
import { budgetContract } from "./budget-contract.js";
import { rateContract } from "./rate-contract.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

describe("in memory", () => {
  budgetContract("memory", async (load, leases) => {
    const g = createMemoryBudgetGuard({ loadTotals: load, ...leases });
    return { guards: [g, g], drop: async () => {} };
  });
  rateContract("memory", async () => {
    const l = createMemoryRateLimiter();
    return { limiters: [l, l], drop: async () => {} };
  });
});

describe("redis", () => {
  const admin = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
  const prefixes: string[] = [];
  const prefix = () => {
    const p = `metering-test-${randomBytes(6).toString("hex")}`;
    prefixes.push(p);
    return p;
  };
  const dropPrefix = async (p: string) => {
    for (let cursor = "0"; ; ) {
      const [next, keys] = await admin.scan(cursor, "MATCH", `${p}:*`, "COUNT", 500);
      if (keys.length > 0) await admin.del(...keys);
      if ((cursor = next) === "0") break;
    }
  };
  afterAll(async () => {
    for (const p of prefixes) await dropPrefix(p);
    await admin.quit();
  });

  budgetContract("redis", async (load: LoadMonthTotals, leases) => {
    const p = prefix();
    const guards = [0, 1].map(() => createRedisBudgetGuard({ redis: { target: REDIS_URL }, prefix: p, loadTotals: load, ...leases })) as [
      ReturnType<typeof createRedisBudgetGuard>,
      ReturnType<typeof createRedisBudgetGuard>,
    ];
    return { guards, drop: () => dropPrefix(p) };
  });
  rateContract("redis", async () => {
    const p = prefix();
    const limiters = [0, 1].map(() => createRedisRateLimiter({ redis: { target: REDIS_URL }, prefix: p })) as [
      ReturnType<typeof createRedisRateLimiter>,
      ReturnType<typeof createRedisRateLimiter>,
    ];
    return { limiters, drop: () => dropPrefix(p) };
  });

  it("rebuilds counters from the ledger after Redis loses them", async () => {
    const p = prefix();
    let ledgerCost = 0;
    const g = createRedisBudgetGuard({ redis: { client: admin }, prefix: p, loadTotals: async () => ({ costMicroUsd: ledgerCost, tokens: 0 }) });
    const req = { tenantId: "t-rebuild", userId: undefined, limits: { tenant: { monthlyCostMicroUsd: 1_000 } }, estimate: { costMicroUsd: 400, tokens: 1 }, chargeCost: true };
    const first = await g.reserve(req);
    if (!first.ok) throw new Error("expected admission");
    ledgerCost = 700; // the attempt ran and its ledger row was written
    await g.settle(first.reservation, { costMicroUsd: 700, tokens: 1 });
    await dropPrefix(p); // Redis lost everything
    expect(await g.reserve(req)).toMatchObject({ ok: false, refused: { used: 700 } });
    expect(await admin.exists(`${p}:budget:{t-rebuild}:${new Date().toISOString().slice(0, 7)}:tenant`)).toBe(1);
    await g.close(); // borrowed connection stays open
    expect(await admin.ping()).toBe("PONG");
  });
});

describe("run meter during a store outage", () => {
  it("refuses the run and the attempt with a retryable unavailable, not internal (fail closed)", async () => {
    // A real store, closed: every query fails as when the database cannot be reached.
    const store = await createStore({ driver: "pglite", dataDir: undefined });
    await store.close();
    const errors: string[] = [];
    const meter = createRunMeter({
      store,
      budgets: createMemoryBudgetGuard({ loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) }),
      rates: createMemoryRateLimiter(),
      onError: (_err, where) => void errors.push(where),
    });
    const ref = { tenantId: "outage", requestId: "r1" };
    const principal = { userId: undefined, keyId: "key-1", originalRequestId: undefined, ghostMode: false };
    const run = await meter.admitRun(ref, principal);
    expect(run).toMatchObject({ ok: false, error: { kind: "gateway_unavailable", message: expect.stringMatching(/retry/) } });
    const attempt = await meter.admitAttempt({
      ref, generation: 1, conversationId: "c1", modelCallId: "mc-1", attempt: 1, principal, modelId: "m",
      provider: "openai-chat", upstreamModel: "sim-model", credentialsSource: "gateway", estimatedInputTokens: 10, maxOutputTokens: 10,
    });
    expect(attempt).toMatchObject({ ok: false, error: { kind: "gateway_unavailable" } });
    expect(errors).toEqual(["admit_run", "admit_attempt"]);
    // The engine maps the kind to the client's code: retryable unavailable.
    expect(endFor(attempt.ok ? { kind: "internal", message: "" } : attempt.error)).toMatchObject({ code: "unavailable", detail: { isRetryable: true } });
  });
});
