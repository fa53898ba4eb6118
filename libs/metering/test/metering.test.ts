/** Runs the budget and rate contracts on the in-memory and Redis implementations. */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { endFor } from "@byok/protocol";
import { commandCount, monitorCommands } from "@byok/testing";
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

// What a run's metering costs in Redis (issue 14: commands per delivered frame, script calls
// counted): a window's TTL is set once by the script that creates it, the counter is read with one
// HMGET and written with one HSET.
describe("redis commands per operation", () => {
  const admin = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
  const p = `metering-cmds-${randomBytes(6).toString("hex")}`;
  afterAll(async () => {
    for (let cursor = "0"; ; ) {
      const [next, keys] = await admin.scan(cursor, "MATCH", `${p}:*`, "COUNT", 500);
      if (keys.length > 0) await admin.del(...keys);
      if ((cursor = next) === "0") break;
    }
    await admin.quit();
  });
  const counted = async <T>(fn: () => Promise<T>): Promise<{ value: T; commands: number }> => {
    const m = await monitorCommands(REDIS_URL);
    const value = await fn();
    return { value, commands: commandCount(await m.stop(), p) };
  };

  it("rate windows: TTL set when created, never again; the token total is HINCRBY's reply", async () => {
    const rates = createRedisRateLimiter({ redis: { client: admin }, prefix: p });
    const now = new Date();
    const s = { tenantId: "t-cmds", keyId: "k1", limits: { tenant: { runStartsPerMinute: 10 }, key: { runStartsPerMinute: 10 } }, now };
    // EVALSHA + per scope HMGET, HINCRBY, PEXPIRE (both windows are new).
    expect(await counted(() => rates.tryStartRun(s))).toEqual({ value: { ok: true }, commands: 7 });
    const windows = await admin.keys(`${p}:rate:*`);
    expect(windows).toHaveLength(2);
    for (const k of windows) expect(await admin.pttl(k)).toBeGreaterThan(60_000);
    // Existing windows: no PEXPIRE.
    expect((await counted(() => rates.tryStartRun(s))).commands).toBe(5);
    // EVALSHA + HINCRBY per scope (the fields are new but the hashes have their TTL: PEXPIRE NX leaves it).
    await admin.pexpire(windows[0]!, 90_000);
    expect((await counted(() => rates.recordTokens(s, 7))).commands).toBe(5);
    expect(await admin.pttl(windows[0]!)).toBeLessThanOrEqual(90_000);
    expect((await counted(() => rates.recordTokens(s, 5))).commands).toBe(3);
    expect(await admin.hget(windows[0]!, "tokens")).toBe("12");
    // A window that recordTokens creates gets its TTL there.
    const later = { ...s, now: new Date(now.getTime() + 60_000) };
    expect((await counted(() => rates.recordTokens(later, 3))).commands).toBe(5);
    const created = (await admin.keys(`${p}:rate:*`)).filter((k) => !windows.includes(k));
    expect(created).toHaveLength(2);
    for (const k of created) expect(await admin.pttl(k)).toBeGreaterThan(60_000);
    // The limit still holds on the window recordTokens created.
    expect((await rates.tryStartRun({ ...later, limits: { tenant: { tokensPerMinute: 3 } } })).ok).toBe(false);
  });

  it("budget reserve: one HMGET and one HSET per scope, the expired set's TTL only when written", async () => {
    const g = createRedisBudgetGuard({ redis: { client: admin }, prefix: p, loadTotals: async () => ({ costMicroUsd: 100, tokens: 10 }), leaseTtlMs: 200 });
    const req = {
      tenantId: "t-budget", userId: "u1", chargeCost: true, estimate: { costMicroUsd: 50, tokens: 5 },
      limits: { tenant: { monthlyCostMicroUsd: 1_000 }, user: { monthlyCostMicroUsd: 1_000 } },
    };
    await g.reserve(req); // seeds both counters
    // EVALSHA + TIME + per scope HMGET, ZRANGEBYSCORE, ZREMRANGEBYSCORE, HSET, ZADD, PEXPIREAT.
    const { value: r, commands } = await counted(() => g.reserve(req));
    expect(r.ok).toBe(true);
    expect(commands).toBe(14);
    const month = new Date().toISOString().slice(0, 7);
    const tenant = `${p}:budget:{t-budget}:${month}:tenant`;
    expect(await admin.hmget(tenant, "cost", "tokens")).toEqual(["200", "20"]);
    expect(await admin.exists(`${tenant}:expired`)).toBe(0);
    if (!r.ok) throw new Error("expected admission");
    // Settle: EVALSHA + per scope ZREM, HMGET, HSET.
    expect(await counted(() => g.settle(r.reservation, { costMicroUsd: 30, tokens: 2 }))).toEqual({ value: "live", commands: 7 });
    expect(await admin.hmget(tenant, "cost", "tokens")).toEqual(["180", "17"]);
    // The other lease expires: released (the counter loses it), remembered in the expired set with its TTL.
    await new Promise((res) => setTimeout(res, 250));
    const refused = await g.reserve({ ...req, estimate: { costMicroUsd: 2_000, tokens: 1 } });
    expect(refused).toMatchObject({ ok: false, refused: { used: 130 } });
    expect(await admin.hmget(tenant, "cost", "tokens")).toEqual(["130", "12"]);
    expect(await admin.zcard(`${tenant}:expired`)).toBe(1);
    expect(await admin.pttl(`${tenant}:expired`)).toBeGreaterThan(3_600_000);
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
