// Test harness: an embedded gateway on a free port with shortened timers, plus the simulator.
import { loadConfig, type GatewayConfig } from "@byok/config";
import { createLogger } from "@byok/telemetry";
import { startSimulator, type Simulator } from "@byok/testing";
import { startEmbeddedGateway, type EmbeddedGateway } from "../src/index.js";

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
    { modelId: "sim-client-key", targets: [{ provider: "openai-chat", model: "sim-chat", baseUrl: `${simUrl}/v1`, credentials: "client" }] },
  ];
}

export interface Harness {
  gw: EmbeddedGateway;
  sim: Simulator;
  config: GatewayConfig;
  close(): Promise<void>;
}

export async function startHarness(env: Record<string, string> = {}, logger = createLogger({ service: "test", level: "silent" })): Promise<Harness> {
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
  const gw = await startEmbeddedGateway(config, {
    logger,
    retry: { baseDelayMs: 5, maxDelayMs: 20 },
    env: { TEST_PROVIDER_KEY: GATEWAY_PROVIDER_KEY, TEST_AWS_KEY_ID: "AKIATESTGATEWAY0001", TEST_AWS_SECRET: BEDROCK_SECRET },
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
