// Test harness: an embedded gateway on a free port with shortened timers, plus the simulator.
import { loadConfig, type GatewayConfig } from "@byok/config";
import { createLogger } from "@byok/telemetry";
import { startSimulator, type Simulator, type SimulatorOptions } from "@byok/testing";
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { createRedisBus, type BusOptions } from "@byok/bus";
import { startGatewayService, type GatewayService } from "../src/index.js";

/** Deletes a test's Redis keys (the Redis is shared: never FLUSHDB). */
export async function deleteKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 500);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

export const TEST_MODEL = "test-model";
export const GATEWAY_PROVIDER_KEY = "sk-gateway-secret-0123456789abcdef";

export const BEDROCK_SECRET = "bedrock-secret-access-key-0123456789";

/** One route per provider API, all served by the simulator (model id = `sim-<provider>`). */
function providerRoutes(simUrl: string) {
  return [
    { modelId: "sim-openai-chat", targets: [{ provider: "openai-chat", model: "sim-chat", baseUrl: `${simUrl}/v1`, apiKeyEnv: "TEST_PROVIDER_KEY" }] },
    { modelId: "sim-openai-responses", targets: [{ provider: "openai-responses", model: "gpt-5", baseUrl: `${simUrl}/v1`, apiKeyEnv: "TEST_PROVIDER_KEY" }] },
    { modelId: "sim-anthropic", targets: [{ provider: "anthropic", model: "claude-sonnet-4-5", baseUrl: simUrl, apiKeyEnv: "TEST_PROVIDER_KEY" }] },
    { modelId: "sim-azure-openai", targets: [{ provider: "azure-openai", model: "prod-4o", baseUrl: simUrl, azure: { deployment: "prod-4o" }, apiKeyEnv: "TEST_PROVIDER_KEY" }] },
    {
      modelId: "sim-bedrock-anthropic",
      targets: [{
        provider: "bedrock-anthropic", model: "us.anthropic.claude-sonnet-4-5-v1:0", baseUrl: simUrl,
        bedrock: { region: "us-west-2", accessKeyIdEnv: "TEST_AWS_KEY_ID", secretAccessKeyEnv: "TEST_AWS_SECRET" },
      }],
    },
    // A tiny context window: every later turn is compacted first.
    { modelId: "sim-small-window", targets: [{ provider: "openai-chat", model: "sim-chat", baseUrl: `${simUrl}/v1`, apiKeyEnv: "TEST_PROVIDER_KEY", contextWindow: 2000 }] },
    { modelId: "sim-client-key", targets: [{ provider: "openai-chat", model: "sim-chat", baseUrl: `${simUrl}/v1`, credentials: "client" }] },
  ];
}

export interface Harness {
  gw: GatewayService;
  sim: Simulator;
  config: GatewayConfig;
  /** The Redis bus's key prefix (redis harnesses only). */
  keyPrefix?: string;
  close(): Promise<void>;
}

/** Which request bus the gateway runs on: embedded mode's, or distributed mode's (Redis). */
export type TestBus = "memory" | "redis";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

export async function startHarness(
  env: Record<string, string> = {},
  logger = createLogger({ service: "test", level: "silent" }),
  busKind: TestBus = "memory",
  simulator: SimulatorOptions = {},
): Promise<Harness> {
  const keyPrefix = `test:gw:${randomUUID().slice(0, 8)}`;
  const sim = await startSimulator(simulator);
  const base = loadConfig(
    {
      GATEWAY_PORT: "0",
      GATEWAY_HEARTBEAT_MS: "60000",
      GATEWAY_NOT_FOUND_WAIT_MS: "3000",
      GATEWAY_NEW_GENERATION_WAIT_MS: "100",
      // Presence, supersede and a taken prewarm reach the run as bus wake-ups; the fallback
      // poll is kept out of the way so the tests exercise the wake-ups.
      GATEWAY_PRESENCE_CHECK_MS: "600000",
      GATEWAY_SEQNO_WINDOW: "16",
      GATEWAY_MAX_PAYLOAD_BYTES: "65536",
      GATEWAY_LOG_LEVEL: "silent",
      TEST_PROVIDER_KEY: GATEWAY_PROVIDER_KEY,
      TEST_AWS_KEY_ID: "AKIATESTGATEWAY0001",
      TEST_AWS_SECRET: BEDROCK_SECRET,
      GATEWAY_ROUTES_JSON: JSON.stringify([
        { modelId: TEST_MODEL, targets: [{ provider: "openai-chat", model: "sim-model", baseUrl: `${sim.url}/v1`, apiKeyEnv: "TEST_PROVIDER_KEY" }] },
        ...providerRoutes(sim.url),
      ]),
      ...env,
    },
    { mode: "embedded" },
  );
  // In-memory PGlite: every harness starts from an empty store.
  const config: GatewayConfig = { ...base, store: { driver: "pglite", dataDir: undefined } };
  const gw = await startGatewayService(config, {
    logger,
    retry: { baseDelayMs: 5, maxDelayMs: 20 },
    ...(busKind === "redis"
      ? { bus: (options: BusOptions) => createRedisBus({ redis: REDIS_URL, keyPrefix, options, name: `gw-test-${keyPrefix.slice(-8)}` }) }
      : {}),
    env: { TEST_PROVIDER_KEY: GATEWAY_PROVIDER_KEY, TEST_AWS_KEY_ID: "AKIATESTGATEWAY0001", TEST_AWS_SECRET: BEDROCK_SECRET },
  });
  return {
    gw,
    sim,
    config,
    ...(busKind === "redis" ? { keyPrefix } : {}),
    async close() {
      await gw.close();
      await sim.close();
      if (busKind === "redis") await deleteKeys(keyPrefix);
    },
  };
}

/** One admin API call on the embedded gateway (`/admin`), JSON in and out. */
export async function adminCall<T = Record<string, unknown>>(
  gw: GatewayService,
  adminKey: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${gw.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${adminKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as T };
}
