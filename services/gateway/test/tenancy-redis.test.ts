// Run-start rate limits across two ingress replicas: two gateways (each its own ingress,
// engine and store) share one Redis rate limiter and budget guard, so the tenant's limit holds
// across both. The limiter's clock is pinned to one minute so no window boundary interferes.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { loadConfig } from "@byok/config";
import { createRedisBudgetGuard, createRedisRateLimiter, type RateLimiter } from "@byok/metering";
import { createLogger } from "@byok/telemetry";
import { createCursorClient, runRequestMessage, startSimulator, withinOneMinuteWindow, type Simulator } from "@byok/testing";
import { ErrorDetails_Error } from "@byok/wire";
import { startGatewayService, type GatewayService } from "../src/index.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const PINNED = new Date("2030-01-01T00:00:30Z");

describe("rate limits across two replicas sharing Redis", () => {
  const prefix = `test:tenancy:${randomUUID().slice(0, 8)}`;
  let sim: Simulator;
  let redis: Redis;
  let gws: GatewayService[] = [];

  beforeAll(async () => {
    sim = await startSimulator();
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const shared = createRedisRateLimiter({ redis: { client: redis }, prefix });
    const pinned: RateLimiter = {
      tryStartRun: (s) => shared.tryStartRun({ ...s, now: PINNED }),
      recordTokens: (s, tokens) => shared.recordTokens({ ...s, now: PINNED }, tokens),
      close: async () => {},
    };
    const config = loadConfig(
      {
        GATEWAY_PORT: "0",
        GATEWAY_LOG_LEVEL: "silent",
        GATEWAY_KV_ACK_TIMEOUT_MS: "300",
        GATEWAY_ROUTES_JSON: JSON.stringify([{ modelId: "m", targets: [{ provider: "openai-chat", model: "sim-model", baseUrl: `${sim.url}/v1`, apiKey: "sk-replica-test-0123456789" }] }]),
      },
      { mode: "embedded" },
    );
    for (let i = 0; i < 2; i++) {
      const gw = await startGatewayService(
        { ...config, store: { driver: "pglite", dataDir: undefined } },
        {
          logger: createLogger({ service: "test", level: "silent" }),
          rates: pinned,
          budgets: createRedisBudgetGuard({ redis: { client: redis }, prefix, loadTotals: async () => ({ costMicroUsd: 0, tokens: 0 }) }),
          env: {},
        },
      );
      // Each replica's store holds the tenant's limits (in production both read one database).
      await gw.store.tenants.update(config.defaultTenant, { limits: { rate: { runStartsPerMinute: 3 } } });
      gws.push(gw);
    }
  });

  afterAll(async () => {
    for (const gw of gws) await gw.close();
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    await sim.close();
  });

  it("admits exactly the tenant's run starts per minute over both replicas; the rest end resource_exhausted + ERROR_RATE_LIMITED", async () => {
    const clients = gws.map((gw) => createCursorClient({ baseUrl: gw.url }));
    const results = [];
    await withinOneMinuteWindow();
    for (let i = 0; i < 6; i++) {
      sim.enqueue({ text: `run ${i}`, usage: { inputTokens: 1, outputTokens: 1 } });
      results.push(await clients[i % 2]!.runTurn({ requestId: `replica-${i}`, message: runRequestMessage({ text: "go", conversationId: `c-${i}`, modelId: "m" }) }));
    }
    expect(results.filter((r) => r.end?.ok === true)).toHaveLength(3);
    const refused = results.filter((r) => r.end?.ok === false);
    expect(refused).toHaveLength(3);
    for (const r of refused) {
      expect(r.appends[0]).toEqual({ ok: true });
      expect(r.end).toMatchObject({ ok: false, code: "resource_exhausted" });
      if (r.end?.ok !== false) throw new Error("expected an error end");
      expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.RATE_LIMITED);
    }
    // Refusals came from both replicas: the counter is shared.
    expect(new Set(results.map((r, i) => (r.end?.ok === false ? i % 2 : -1)).filter((x) => x >= 0)).size).toBe(2);
  });
});
