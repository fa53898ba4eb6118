import { afterEach, beforeEach, describe, expect, it } from "vitest";
import Anthropic from "@anthropic-ai/sdk";
import { AnthropicBedrock } from "@anthropic-ai/bedrock-sdk";
import type { RawMessageStreamEvent } from "@anthropic-ai/sdk/resources/messages";
import { startSimulator, type Simulator } from "./index.js";

let sim: Simulator;
beforeEach(async () => {
  sim = await startSimulator();
});
afterEach(() => sim.close());

async function collect(stream: AsyncIterable<RawMessageStreamEvent>): Promise<RawMessageStreamEvent[]> {
  const out: RawMessageStreamEvent[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

const script = {
  reasoning: "Think.",
  reasoningSignature: "SIG-1",
  text: "Hello you",
  toolCalls: [{ id: "toolu_1", name: "grep", arguments: ['{"q":', '"x"}'] }],
  usage: { inputTokens: 10, outputTokens: 30, cacheReadTokens: 100, cacheWriteTokens: 20 },
};

const expectedTypes = [
  "message_start",
  "content_block_start",
  "content_block_delta",
  "content_block_delta",
  "content_block_stop",
  "content_block_start",
  "content_block_delta",
  "content_block_delta",
  "content_block_stop",
  "content_block_start",
  "content_block_delta",
  "content_block_delta",
  "content_block_stop",
  "message_delta",
  "message_stop",
];

describe("simulator: Anthropic Messages", () => {
  it("streams the documented event flow that the official SDK parses (ping skipped by the SDK)", async () => {
    sim.enqueue(script);
    const client = new Anthropic({ apiKey: "sk-ant-test", baseURL: sim.url, maxRetries: 0, logLevel: "off" });
    const events = await collect(await client.messages.create({ model: "claude-sim", max_tokens: 100, messages: [{ role: "user", content: "hi" }], stream: true }));
    expect(events.map((e) => e.type)).toEqual(expectedTypes);
    expect(events[0]).toMatchObject({ message: { usage: { input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 } } });
    expect(events[3]).toMatchObject({ delta: { type: "signature_delta", signature: "SIG-1" } });
    expect(events[9]).toMatchObject({ content_block: { type: "tool_use", id: "toolu_1", name: "grep" } });
    expect(events[13]).toMatchObject({ delta: { stop_reason: "tool_use" }, usage: { output_tokens: 30 } });
    expect(sim.requests[0]?.headers["authorization"] ?? sim.requests[0]?.headers["x-api-key"]).toMatch(/sk-ant-test/);
  });

  it("reports errors inside the stream and HTTP errors", async () => {
    sim.enqueue({ text: "a b", streamError: { afterChunks: 3, code: "overloaded_error", message: "Overloaded" } }, { httpError: { status: 529 } });
    const client = new Anthropic({ apiKey: "k", baseURL: sim.url, maxRetries: 0, logLevel: "off" });
    const s = await client.messages.create({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }], stream: true });
    await expect(collect(s)).rejects.toMatchObject({ type: "overloaded_error" });
    await expect(client.messages.create({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }], stream: true })).rejects.toMatchObject({ status: 529 });
  });
});

describe("simulator: Bedrock (Anthropic models)", () => {
  const client = () =>
    new AnthropicBedrock({
      awsAccessKey: "AKIASIMULATOR000",
      awsSecretKey: "sim-secret",
      awsRegion: "us-east-1",
      baseURL: sim.url,
      maxRetries: 0,
      logLevel: "off",
      apiKey: null,
    });

  it("serves the Messages event flow in AWS event-stream framing that the Bedrock SDK parses", async () => {
    sim.enqueue(script);
    const events = await collect(
      await client().messages.create({ model: "anthropic.claude-sim-v1:0", max_tokens: 100, messages: [{ role: "user", content: "hi" }], stream: true }),
    );
    expect(events.map((e) => e.type)).toEqual(expectedTypes);
    const req = sim.requests[0];
    expect(req?.api).toBe("bedrock-anthropic");
    expect(req?.pathname).toBe("/model/anthropic.claude-sim-v1:0/invoke-with-response-stream");
    expect(req?.body).toMatchObject({ anthropic_version: expect.any(String), max_tokens: 100 });
    expect(req?.body?.["model"]).toBeUndefined();
    expect(req?.headers["authorization"]).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIASIMULATOR000\//);
    expect(sim.findSecret("sim-secret")).toEqual([]);
  });

  it("turns exception frames and malformed chunks into SDK errors", async () => {
    sim.enqueue({ text: "a b", streamError: { afterChunks: 2, code: "throttlingException", message: "Too many requests" } }, { text: "a b c", malformedAt: 3 });
    const s1 = await client().messages.create({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }], stream: true });
    await expect(collect(s1)).rejects.toMatchObject({ type: "throttlingException" });
    const s2 = await client().messages.create({ model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }], stream: true });
    await expect(collect(s2)).rejects.toThrow(/Could not parse/);
  });
});
