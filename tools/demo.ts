// `npm run demo`: the embedded gateway and the provider simulator in one process; one scripted
// conversation through the Cursor-protocol test client, printing the streamed answer and usage.
import { loadConfig } from "@byok/config";
import { createLogger } from "@byok/telemetry";
import { createCursorClient, runRequestMessage, startSimulator } from "@byok/testing";
import { startGatewayService } from "@byok/gateway";

const sim = await startSimulator();
sim.enqueue({
  reasoning: ["The user wants a greeting ", "and a fact about gateways."],
  text: ["Hello! ", "I am answering through the Cursor BYOK Gateway: ", "your Cursor client spoke BidiAppend/RunSSE to it, ", "and it called the model with the company's own key."],
  chunkDelayMs: 40,
  usage: { inputTokens: 128, outputTokens: 42, cacheReadTokens: 64, reasoningTokens: 9 },
});
const config = loadConfig(
  {
    GATEWAY_PORT: "0",
    GATEWAY_LOG_LEVEL: "warn",
    DEMO_PROVIDER_KEY: "sk-demo-not-a-real-key",
    GATEWAY_ROUTES_JSON: JSON.stringify([
      { modelId: "demo-model", targets: [{ provider: "openai-chat", model: "sim-model", baseUrl: `${sim.url}/v1`, apiKeyEnv: "DEMO_PROVIDER_KEY" }] },
    ]),
  },
  { mode: "embedded" },
);
const gw = await startGatewayService(
  { ...config, store: { driver: "pglite", dataDir: undefined } },
  { logger: createLogger({ service: "demo", level: "warn" }), env: { DEMO_PROVIDER_KEY: "sk-demo-not-a-real-key" } },
);
console.log(`gateway ${gw.url}  ·  provider simulator ${sim.url}\n`);
console.log("user › Say hello and tell me what you are.\n");
process.stdout.write("model › ");

const client = createCursorClient({ baseUrl: gw.url });
let thinking = false;
const result = await client.runTurn({
  requestId: `demo-${Date.now()}`,
  message: runRequestMessage({ text: "Say hello and tell me what you are.", conversationId: "demo-conversation", modelId: "demo-model" }),
  onMessage: (m) => {
    if (m.message.case !== "interactionUpdate") return;
    const u = m.message.value.message;
    if (u.case === "thinkingDelta") {
      if (!thinking) process.stdout.write("(thinking: ");
      thinking = true;
      process.stdout.write(u.value.text);
    } else if (u.case === "thinkingCompleted") {
      process.stdout.write(`) [${u.value.thinkingDurationMs} ms]\n        `);
      thinking = false;
    } else if (u.case === "textDelta") {
      process.stdout.write(u.value.text);
    }
  },
});
const t = result.turnEnded;
console.log("\n");
console.log(`end-stream: ${result.end?.ok ? "{} (ok)" : JSON.stringify(result.end)}  ·  checkpoints: ${result.checkpoints}`);
if (t) {
  console.log(
    `usage › input ${t.inputTokens} · output ${t.outputTokens} · cache read ${t.cacheReadTokens} · cache write ${t.cacheWriteTokens} · reasoning ${t.reasoningTokens}`,
  );
}
await gw.close();
await sim.close();
process.exit(result.end?.ok ? 0 : 1);
