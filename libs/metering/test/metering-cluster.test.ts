// Metering on a real 3-node Redis Cluster: the budget and rate contracts with each guard and
// limiter on its own cluster connection (two replicas), every key of one tenant in one slot,
// and tokens-per-minute limits that count the usage settled by one replica on another.
import { createRequire } from "node:module";
import { randomUUID } from "node:crypto";
import { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AttemptInfo } from "@byok/agent";
import { createStore, type GatewayStore } from "@byok/store";
import { haveRedisServerBinary, startRedisCluster, type PrivateRedisCluster } from "@byok/testing";
import { createRedisBudgetGuard, createRedisRateLimiter, createRunMeter, type LoadMonthTotals } from "../src/index.js";
import { budgetContract } from "./budget-contract.js";
import { rateContract } from "./rate-contract.js";

const calculateSlot = createRequire(import.meta.url)("cluster-key-slot") as (key: string) => number;
const haveRedisServer = await haveRedisServerBinary();
const PINNED = new Date("2030-01-01T00:00:30Z");

describe.runIf(haveRedisServer)("metering on a Redis Cluster (3 local nodes)", () => {
  let cluster: PrivateRedisCluster;
  let admin: Cluster;
  const target = () => ({ cluster: cluster.ports.map((port) => ({ host: "127.0.0.1", port })) });
  const prefix = () => `metering-cluster-${randomUUID().slice(0, 8)}`;
  /** Every key under `p` on every node, with the node's port. */
  const keysOf = async (p: string) => {
    const found: { port: number; key: string }[] = [];
    for (const node of admin.nodes("master")) {
      const port = Number(node.options.port);
      for (const key of await node.keys(`${p}:*`)) found.push({ port, key });
    }
    return found;
  };

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    admin = new Cluster(target().cluster);
    await admin.ping();
  }, 60_000);
  afterAll(async () => {
    admin?.disconnect();
    await cluster?.close();
  });

  // The contract suites run on the cluster from inside their own describe blocks; their
  // factories open the connections lazily (the cluster exists by then).
  budgetContract("redis cluster", async (load: LoadMonthTotals, leases) => {
    const p = prefix();
    const guards = [0, 1].map(() => createRedisBudgetGuard({ redis: { target: target() }, prefix: p, loadTotals: load, ...leases })) as [
      ReturnType<typeof createRedisBudgetGuard>,
      ReturnType<typeof createRedisBudgetGuard>,
    ];
    return { guards, drop: async () => {} };
  });
  rateContract("redis cluster", async () => {
    const p = prefix();
    const limiters = [0, 1].map(() => createRedisRateLimiter({ redis: { target: target() }, prefix: p })) as [
      ReturnType<typeof createRedisRateLimiter>,
      ReturnType<typeof createRedisRateLimiter>,
    ];
    return { limiters, drop: async () => {} };
  });

  it("keeps every budget and rate key of one tenant in one slot, and tenants spread over the nodes", async () => {
    const p = prefix();
    const budgets = createRedisBudgetGuard({ redis: { target: target() }, prefix: p, loadTotals: async () => ({ costMicroUsd: 0, tokens: 0 }) });
    const rates = createRedisRateLimiter({ redis: { target: target() }, prefix: p });
    try {
      const tenants = Array.from({ length: 12 }, (_, i) => `tenant:{${i}}`);
      for (const tenantId of tenants) {
        const r = await budgets.reserve({ tenantId, userId: "u:1", limits: {}, estimate: { costMicroUsd: 1, tokens: 1 }, chargeCost: true });
        expect(r.ok).toBe(true);
        expect((await rates.tryStartRun({ tenantId, keyId: "k}1", limits: {} })).ok).toBe(true);
        await rates.recordTokens({ tenantId, keyId: "k}1" }, 5);
      }
      const keys = await keysOf(p);
      const ports = new Set<number>();
      for (const tenantId of tenants) {
        const own = keys.filter((k) => k.key.includes(`{${tenantId.replace(/[%{}:]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}}`));
        // tenant + user budget counters, tenant + key rate windows
        expect(own.length).toBeGreaterThanOrEqual(4);
        expect(new Set(own.map((k) => calculateSlot(k.key))).size).toBe(1);
        expect(new Set(own.map((k) => k.port)).size).toBe(1);
        ports.add(own[0]!.port);
      }
      expect(ports.size).toBeGreaterThan(1);
    } finally {
      await budgets.close();
      await rates.close();
    }
  });

  describe("run meters of two replicas", () => {
    let store: GatewayStore;
    beforeAll(async () => {
      store = await createStore({ driver: "pglite", dataDir: undefined });
    });
    afterAll(async () => store?.close());

    function replica(p: string) {
      const budgets = createRedisBudgetGuard({ redis: { target: target() }, prefix: p, loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) });
      const rates = createRedisRateLimiter({ redis: { target: target() }, prefix: p });
      // One pinned minute: no window boundary can fall between the settle and the refused start.
      return { meter: createRunMeter({ store, budgets, rates, now: () => PINNED }), close: async () => { await budgets.close(); await rates.close(); } };
    }
    const attempt = (tenantId: string, requestId: string): AttemptInfo => ({
      ref: { tenantId, requestId },
      generation: 1,
      conversationId: `conv-${requestId}`,
      modelCallId: "mc-1",
      attempt: 1,
      principal: { userId: undefined, keyId: "key-1", originalRequestId: undefined, ghostMode: false },
      modelId: "m",
      provider: "openai-chat",
      upstreamModel: "sim-model",
      credentialsSource: "client",
      estimatedInputTokens: 10,
      maxOutputTokens: 10,
    });

    it("counts the tokens settled on one replica against the tokens-per-minute limit on the other", async () => {
      const p = prefix();
      const tenantId = `tpm-${randomUUID().slice(0, 8)}`;
      await store.tenants.create({ tenantId, name: tenantId, limits: { rate: { tokensPerMinute: 4_000 } } });
      const a = replica(p);
      const b = replica(p);
      try {
        const ref = { tenantId, requestId: "r1" };
        const principal = { userId: undefined, keyId: "key-1", originalRequestId: undefined, ghostMode: false };
        expect(await a.meter.admitRun(ref, principal)).toEqual({ ok: true });
        const admitted = await a.meter.admitAttempt(attempt(tenantId, "r1"));
        if (!admitted.ok) throw new Error("attempt refused");
        // The estimate (20 tokens) is far below the limit: the other replica still admits runs.
        expect(await b.meter.admitRun({ tenantId, requestId: "r2" }, principal)).toEqual({ ok: true });
        // The attempt actually used 4 500 tokens: settled on replica a …
        await a.meter.settleAttempt(attempt(tenantId, "r1"), admitted.ticket, {
          outcome: "ok",
          usage: { inputTokens: 4_000, outputTokens: 500, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: false, raw: {} },
          ttftMs: 5,
          ttftOverheadUs: 1_250.4,
          durationMs: 10,
        });
        // The row carries the gateway's TTFT overhead, whole microseconds.
        expect((await store.ledger.forRequest(tenantId, "r1")).map((r) => [r.ttftMs, r.ttftOverheadUs])).toEqual([[5, 1_250]]);
        // … and replica b refuses the next run start of the same minute.
        const refused = await b.meter.admitRun({ tenantId, requestId: "r3" }, principal);
        expect(refused).toMatchObject({ ok: false, error: { kind: "rate_limited" } });
        if (!refused.ok) expect(refused.error.message).toContain("4,000 tokens per minute");
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
});
