import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "@byok/testing";
import type { ProviderTarget } from "@byok/protocol";
import { completedOf, errorSurface, makeRequest, runPass, textOf } from "../test-support/helpers.js";
import { createBedrockAdapter, BEDROCK_ANTHROPIC_VERSION } from "./adapter.js";

const SECRET = "bedrock-secret-key-0123456789";
let sim: Simulator;
let target: ProviderTarget;
const adapter = createBedrockAdapter();

beforeEach(async () => {
  sim = await startSimulator();
  target = {
    kind: "bedrock-anthropic",
    model: "us.anthropic.claude-sonnet-4-5-v1:0",
    baseUrl: sim.url,
    bedrock: { region: "us-west-2", accessKeyId: "AKIATESTBEDROCK01", secretAccessKey: SECRET, sessionToken: "session-token-xyz-123" },
    credentialsSource: "client",
    maxOutputTokens: 8_000,
  };
});
afterEach(() => sim.close());

describe("Bedrock adapter (Anthropic models)", () => {
  it("signs with SigV4, sends the Bedrock body and decodes the event stream", async () => {
    sim.enqueue({ reasoning: "hmm", reasoningSignature: "S", text: "Hi.", toolCalls: [{ name: "grep", arguments: '{"q":1}' }], usage: { inputTokens: 3, outputTokens: 9, cacheReadTokens: 2 } });
    const { events, error } = await runPass(adapter, makeRequest(target, { reasoningEffort: "low" }));
    expect(error).toBeUndefined();
    expect(textOf(events, "text_delta")).toBe("Hi.");
    expect(textOf(events, "reasoning_delta")).toBe("hmm");
    expect(completedOf(events)).toMatchObject({ endTurn: false, usage: { inputTokens: 3, outputTokens: 9, cacheReadTokens: 2, estimated: false } });
    const req = sim.requests[0];
    expect(req?.pathname).toBe("/model/us.anthropic.claude-sonnet-4-5-v1:0/invoke-with-response-stream");
    expect(req?.body).toMatchObject({ anthropic_version: BEDROCK_ANTHROPIC_VERSION, max_tokens: 8_000, thinking: { type: "enabled", budget_tokens: 2_048 } });
    expect(req?.headers["authorization"]).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIATESTBEDROCK01\/\d{8}\/us-west-2\/bedrock\//);
    expect(req?.headers["x-amz-security-token"]).toBe("session-token-xyz-123");
    expect(sim.findSecret(SECRET)).toEqual([]);
  });

  it("maps Bedrock exceptions, HTTP errors, malformed chunks and cuts", async () => {
    sim.enqueue(
      { text: "a b", streamError: { afterChunks: 3, code: "throttlingException", message: "Too many requests, please wait before trying again." } },
      { text: "a b", streamError: { afterChunks: 3, code: "modelStreamErrorException", message: "Model stream error" } },
      { httpError: { status: 400, body: { message: "Input is too long for requested model." } } },
      { httpError: { status: 403, body: { message: `The security token included in the request is invalid. ${SECRET}` } } },
      { httpError: { status: 429, body: { message: "Too many requests" } } },
      { httpError: { status: 503, body: { message: "Service unavailable" } } },
      { text: "a b c", malformedAt: 4 },
      { text: "a b c", disconnectAfterChunks: 4 },
    );
    const kinds: (string | undefined)[] = [];
    for (let i = 0; i < 8; i++) {
      const { error } = await runPass(adapter, makeRequest(target));
      kinds.push(error?.kind);
      expect(errorSurface(error)).not.toContain(SECRET);
    }
    expect(kinds).toEqual(["rate_limited", "server", "context_overflow", "auth", "rate_limited", "overloaded", "malformed_stream", "network"]);
  });

  it("cancel closes the connection", async () => {
    sim.enqueue({ text: "one two three four", stallAfterChunks: 5 });
    const ac = new AbortController();
    const { error } = await runPass(adapter, makeRequest(target, { signal: ac.signal }), (e) => {
      if (e.type === "text_delta") ac.abort();
    });
    expect(error?.kind).toBe("cancelled");
    await sim.waitFor((r) => r[0]?.clientDisconnected === true);
  });
});
