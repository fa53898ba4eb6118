// Test harness: an embedded gateway on a free port with shortened timers, plus the simulator.
import { loadConfig, type GatewayConfig } from "@byok/config";
import { createLogger } from "@byok/telemetry";
import { startSimulator, type Simulator } from "@byok/testing";
import { startEmbeddedGateway, type EmbeddedGateway } from "../src/index.js";

export const TEST_MODEL = "test-model";
export const GATEWAY_PROVIDER_KEY = "sk-gateway-secret-0123456789abcdef";

export interface Harness {
  gw: EmbeddedGateway;
  sim: Simulator;
  config: GatewayConfig;
  close(): Promise<void>;
}

export async function startHarness(env: Record<string, string> = {}): Promise<Harness> {
  const sim = await startSimulator();
  const base = loadConfig(
    {
      GATEWAY_PORT: "0",
      GATEWAY_HEARTBEAT_MS: "60000",
      GATEWAY_NOT_FOUND_WAIT_MS: "3000",
      GATEWAY_NEW_GENERATION_WAIT_MS: "100",
      GATEWAY_PRESENCE_CHECK_MS: "100",
      GATEWAY_SEQNO_WINDOW: "16",
      GATEWAY_MAX_PAYLOAD_BYTES: "65536",
      GATEWAY_LOG_LEVEL: "silent",
      TEST_PROVIDER_KEY: GATEWAY_PROVIDER_KEY,
      GATEWAY_ROUTES_JSON: JSON.stringify([
        { modelId: TEST_MODEL, targets: [{ provider: "openai-chat", model: "sim-model", baseUrl: `${sim.url}/v1`, apiKeyEnv: "TEST_PROVIDER_KEY" }] },
      ]),
      ...env,
    },
    { mode: "embedded" },
  );
  // In-memory PGlite: every harness starts from an empty store.
  const config: GatewayConfig = { ...base, store: { driver: "pglite", dataDir: undefined } };
  const gw = await startEmbeddedGateway(config, {
    logger: createLogger({ service: "test", level: "silent" }),
    retry: { baseDelayMs: 5, maxDelayMs: 20 },
    env: { TEST_PROVIDER_KEY: GATEWAY_PROVIDER_KEY },
  });
  return {
    gw,
    sim,
    config,
    async close() {
      await gw.close();
      await sim.close();
    },
  };
}
