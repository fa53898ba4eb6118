// The vendor SDKs add no tracing of their own (docs/observability.md): with a tracer provider
// registered, a call made inside an active span starts no SDK span and sends the vendor no trace
// context, even with the Anthropic SDK's content-mode variable set in the environment (it would
// put prompts into spans whatever the tenant's privacy mode). The engine's `chat {model}` span is
// the one provider-call span.
import { trace } from "@opentelemetry/api";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ProviderAdapter, ProviderTarget } from "@byok/protocol";
import { createMemoryTracing, type MemoryTracing } from "@byok/telemetry";
import { startSimulator, type Simulator } from "@byok/testing";
import { createAnthropicAdapter } from "../anthropic/adapter.js";
import { createAzureOpenAIAdapter } from "../azure-openai/adapter.js";
import { createBedrockAdapter } from "../bedrock/adapter.js";
import { createOpenAIChatAdapter } from "../openai-chat/adapter.js";
import { createOpenAIResponsesAdapter } from "../openai-responses/adapter.js";
import { DEFAULT_AZURE_API_VERSION } from "../routing.js";
import { makeRequest, runPass, textOf } from "../test-support/helpers.js";

const ENV = {
  ANTHROPIC_OPEN_TELEMETRY: "true",
  ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE: "content",
  ANTHROPIC_OPEN_TELEMETRY_PROPAGATION: "true",
};

let tracing: MemoryTracing;
let sim: Simulator;
const saved: Record<string, string | undefined> = {};

beforeAll(() => {
  for (const [k, v] of Object.entries(ENV)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  tracing = createMemoryTracing();
});
afterAll(async () => {
  await tracing.shutdown();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});
beforeEach(async () => {
  sim = await startSimulator();
  tracing.exporter.reset();
});
afterEach(() => sim.close());

const cases: { name: string; adapter: () => ProviderAdapter; target: () => ProviderTarget }[] = [
  { name: "Anthropic", adapter: createAnthropicAdapter, target: () => ({ kind: "anthropic", model: "claude-sonnet-4-5", baseUrl: sim.url, apiKey: "sk-ant-tracing-0123456789", credentialsSource: "client", maxOutputTokens: 1000 }) },
  {
    name: "Bedrock",
    adapter: createBedrockAdapter,
    target: () => ({
      kind: "bedrock-anthropic", model: "us.anthropic.claude-sonnet-4-5-v1:0", baseUrl: sim.url, credentialsSource: "client", maxOutputTokens: 1000,
      bedrock: { region: "us-west-2", accessKeyId: "AKIATRACING0000001", secretAccessKey: "bedrock-tracing-secret-0123456789" },
    }),
  },
  { name: "OpenAI Chat Completions", adapter: createOpenAIChatAdapter, target: () => ({ kind: "openai-chat", model: "sim-chat", baseUrl: `${sim.url}/v1`, apiKey: "sk-tracing-0123456789", credentialsSource: "client" }) },
  { name: "OpenAI Responses", adapter: createOpenAIResponsesAdapter, target: () => ({ kind: "openai-responses", model: "gpt-5", baseUrl: `${sim.url}/v1`, apiKey: "sk-tracing-0123456789", credentialsSource: "client" }) },
  {
    name: "Azure OpenAI",
    adapter: createAzureOpenAIAdapter,
    target: () => ({ kind: "azure-openai", model: "prod-4o", apiKey: "azure-tracing-0123456789", azure: { endpoint: sim.url, deployment: "prod-4o", apiVersion: DEFAULT_AZURE_API_VERSION }, credentialsSource: "client" }),
  },
];

describe.each(cases)("$name adapter under a registered tracer provider", ({ adapter, target }) => {
  it("starts no span of its own and sends no trace context to the vendor", async () => {
    sim.enqueue({ text: "a private answer" });
    const tracer = trace.getTracer("sdk-tracing-test");
    const { events, error } = await tracer.startActiveSpan("caller", async (span) => {
      try {
        return await runPass(adapter(), makeRequest(target(), { items: [{ role: "user", text: "a private prompt" }] }));
      } finally {
        span.end();
      }
    });
    expect(error).toBeUndefined();
    expect(textOf(events, "text_delta")).toBe("a private answer");
    expect(sim.requests).toHaveLength(1);
    const headers = Object.keys(sim.requests[0]!.headers).map((h) => h.toLowerCase());
    expect(headers).not.toContain("traceparent");
    expect(headers).not.toContain("tracestate");
    const spans = tracing.exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(["caller"]);
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toMatch(/private/);
  });
});
