import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "@byok/testing";
import type { ProviderTarget } from "@byok/protocol";
import { completedOf, errorSurface, makeRequest, runPass, textOf } from "../test-support/helpers.js";
import { createAzureOpenAIAdapter } from "./adapter.js";
import { DEFAULT_AZURE_API_VERSION } from "../routing.js";

const KEY = "azure-key-0123456789abcdef";
let sim: Simulator;
let target: ProviderTarget;
const adapter = createAzureOpenAIAdapter();

beforeEach(async () => {
  sim = await startSimulator();
  target = {
    kind: "azure-openai",
    model: "prod-4o",
    apiKey: KEY,
    azure: { endpoint: sim.url, deployment: "prod-4o", apiVersion: DEFAULT_AZURE_API_VERSION },
    credentialsSource: "client",
    maxOutputTokens: 500,
  };
});
afterEach(() => sim.close());

describe("Azure OpenAI adapter", () => {
  it("calls the deployment with api-key and api-version, and decodes Chat Completions", async () => {
    sim.enqueue({ text: "Hello from Azure", toolCalls: [{ name: "grep", arguments: "{}" }], usage: { inputTokens: 4, outputTokens: 6, cacheReadTokens: 1 } });
    const { events, error } = await runPass(adapter, makeRequest(target));
    expect(error).toBeUndefined();
    expect(textOf(events, "text_delta")).toBe("Hello from Azure");
    expect(completedOf(events)).toMatchObject({ endTurn: false, usage: { inputTokens: 4, cacheReadTokens: 1, outputTokens: 6 } });
    const req = sim.requests[0];
    expect(req?.url).toBe(`/openai/deployments/prod-4o/chat/completions?api-version=${DEFAULT_AZURE_API_VERSION}`);
    expect(req?.headers["api-key"]).toBe(KEY);
    expect(req?.body).toMatchObject({ model: "prod-4o", max_completion_tokens: 500, stream_options: { include_usage: true } });
    expect(sim.findSecret(KEY, ["api-key"])).toEqual([]);
  });

  it("accepts an endpoint that already includes /openai", async () => {
    sim.enqueue({ text: "x" });
    await runPass(adapter, makeRequest({ ...target, azure: { endpoint: `${sim.url}/openai/`, deployment: "d2", apiVersion: "2025-04-01-preview" } }));
    expect(sim.requests[0]?.url).toBe("/openai/deployments/d2/chat/completions?api-version=2025-04-01-preview");
  });

  it("maps Azure's content filter and errors without leaking the key", async () => {
    sim.enqueue(
      { text: "partial", finishReason: "content_filter" },
      { httpError: { status: 400, body: { error: { code: "content_filter", message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", innererror: { code: "ResponsibleAIPolicyViolation" } } } } },
      { httpError: { status: 401, body: { error: { code: "401", message: `Access denied due to invalid subscription key ${KEY}` } } } },
      { httpError: { status: 404, body: { error: { code: "DeploymentNotFound", message: "The API deployment for this resource does not exist." } } } },
      { httpError: { status: 429, headers: { "retry-after-ms": "1200" } } },
    );
    const kinds: (string | undefined)[] = [];
    for (let i = 0; i < 5; i++) {
      const { error } = await runPass(adapter, makeRequest(target));
      kinds.push(error?.kind);
      expect(errorSurface(error)).not.toContain(KEY);
    }
    expect(kinds).toEqual(["content_policy", "content_policy", "auth", "not_found", "rate_limited"]);
  });

  it("cancel closes the connection", async () => {
    sim.enqueue({ text: "one two three four", stallAfterChunks: 3 });
    const ac = new AbortController();
    const { error } = await runPass(adapter, makeRequest(target, { signal: ac.signal }), (e) => {
      if (e.type === "text_delta") ac.abort();
    });
    expect(error?.kind).toBe("cancelled");
    await sim.waitFor((r) => r[0]?.clientDisconnected === true);
  });
});
