import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "@byok/testing";
import type { ProviderTarget } from "@byok/protocol";
import { completedOf, errorSurface, makeRequest, runPass, textOf } from "../test-support/helpers.js";
import { createAnthropicAdapter } from "./adapter.js";

const KEY = "sk-ant-secret-0123456789";
let sim: Simulator;
let target: ProviderTarget;
const adapter = createAnthropicAdapter();

beforeEach(async () => {
  sim = await startSimulator();
  target = { kind: "anthropic", model: "claude-sonnet-4-5", baseUrl: sim.url, apiKey: KEY, credentialsSource: "client", maxOutputTokens: 20_000 };
});
afterEach(() => sim.close());

describe("Anthropic Messages adapter", () => {
  it("streams thinking (signature kept), text and tool_use with input_json_delta; normalizes cache usage", async () => {
    sim.enqueue({
      reasoning: "Consider it.",
      reasoningSignature: "SIG-abc",
      text: "Checking.",
      toolCalls: [{ id: "toolu_1", name: "read_file", arguments: ['{"path"', ':"a.ts"}'] }],
      usage: { inputTokens: 12, outputTokens: 50, cacheReadTokens: 1000, cacheWriteTokens: 200 },
    });
    const { events, error } = await runPass(adapter, makeRequest(target, { reasoningEffort: "high" }));
    expect(error).toBeUndefined();
    expect(textOf(events, "reasoning_delta")).toBe("Consider it.");
    expect(textOf(events, "text_delta")).toBe("Checking.");
    expect(events.filter((e) => e.type === "tool_call_delta").map((e) => (e.type === "tool_call_delta" ? e.argsDelta : ""))).toEqual(['{"path"', ':"a.ts"}']);
    expect(events.flatMap((e) => (e.type === "item_done" ? [e.item] : []))).toEqual([
      { kind: "reasoning", id: "mc-1_1_rs0", part: { text: "Consider it.", signature: "SIG-abc" } },
      { kind: "text", id: "mc-1_1_msg0", text: "Checking." },
      { kind: "tool_call", id: "mc-1_1_tc0", call: { id: "mc-1_1_tc0", name: "read_file", argumentsJson: '{"path":"a.ts"}' } },
    ]);
    const c = completedOf(events);
    expect(c).toMatchObject({ endTurn: false, stopReason: "tool_use" });
    expect(c.usage).toMatchObject({ inputTokens: 12, outputTokens: 50, cacheReadTokens: 1000, cacheWriteTokens: 200, reasoningTokens: 0, estimated: false });
    expect(sim.requests[0]?.body).toMatchObject({
      model: "claude-sonnet-4-5",
      max_tokens: 20_000,
      stream: true,
      thinking: { type: "enabled", budget_tokens: 16_384 },
      system: [{ type: "text", text: "You are a helpful assistant.", cache_control: { type: "ephemeral" } }],
      messages: [{ role: "user", content: [{ type: "text", text: "Say hello.", cache_control: { type: "ephemeral" } }] }],
    });
  });

  it("replays signed thinking and redacted thinking, merges tool results into one user turn, caps breakpoints at four", async () => {
    sim.enqueue({ text: "ok" });
    await runPass(
      adapter,
      makeRequest(target, {
        tools: [
          { name: "read_file", description: "r", parameters: { type: "object" } },
          { name: "grep", description: "g", parameters: { type: "object" } },
        ],
        items: [
          { role: "user", text: "first" },
          {
            role: "assistant",
            text: "Looking.",
            reasoning: [{ text: "plan", signature: "SIG-1" }, { text: "", redactedData: "REDACTED-1" }, { text: "from openai", encryptedContent: "x" }],
            toolCalls: [
              { id: "mc-1_1_tc0", name: "read_file", argumentsJson: '{"path":"a"}' },
              { id: "mc-1_1_tc1", name: "grep", argumentsJson: "not json" },
            ],
          },
          { role: "tool", toolCallId: "mc-1_1_tc0", name: "read_file", output: "A" },
          { role: "tool", toolCallId: "mc-1_1_tc1", name: "grep", output: "boom", isError: true },
          { role: "user", text: "and then?" },
        ],
      }),
    );
    const body = sim.requests[0]?.body as Record<string, unknown>;
    expect(body["messages"]).toEqual([
      { role: "user", content: [{ type: "text", text: "first", cache_control: { type: "ephemeral" } }] },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "plan", signature: "SIG-1" },
          { type: "redacted_thinking", data: "REDACTED-1" },
          { type: "text", text: "Looking." },
          { type: "tool_use", id: "mc-1_1_tc0", name: "read_file", input: { path: "a" } },
          { type: "tool_use", id: "mc-1_1_tc1", name: "grep", input: { _raw: "not json" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "mc-1_1_tc0", content: "A" },
          { type: "tool_result", tool_use_id: "mc-1_1_tc1", content: "boom", is_error: true },
          { type: "text", text: "and then?", cache_control: { type: "ephemeral" } },
        ],
      },
    ]);
    expect((body["tools"] as Record<string, unknown>[]).map((t) => t["cache_control"])).toEqual([undefined, { type: "ephemeral" }]);
    expect(JSON.stringify(body).match(/cache_control/g)).toHaveLength(4);
    expect(body["thinking"]).toBeUndefined();
  });

  it("streams redacted thinking as a reasoning item carrying its data", async () => {
    sim.enqueue({ redactedThinking: "OPAQUE", text: "hi" });
    const { events } = await runPass(adapter, makeRequest(target));
    expect(events.find((e) => e.type === "item_done")).toEqual({ type: "item_done", item: { kind: "reasoning", id: "mc-1_1_rs0", part: { text: "", redactedData: "OPAQUE" } } });
  });

  it("maps stop reasons: max_tokens completes, refusal is a content-policy failure", async () => {
    sim.enqueue({ text: "cut", finishReason: "max_tokens" }, { text: "no", finishReason: "refusal" });
    expect(completedOf((await runPass(adapter, makeRequest(target))).events).stopReason).toBe("max_tokens");
    const { error } = await runPass(adapter, makeRequest(target));
    expect(error?.kind).toBe("content_policy");
    expect(error?.partialUsage?.estimated).toBe(false);
  });

  it("maps every fault", async () => {
    sim.enqueue(
      { httpError: { status: 429, headers: { "retry-after": "7" } } },
      { httpError: { status: 529 } },
      { httpError: { status: 401 } },
      { httpError: { status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 210000 tokens > 200000 maximum" } } } },
      { httpError: { status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "Your credit balance is too low to access the Anthropic API." } } } },
      { httpError: { status: 500 } },
      { text: "a b c", streamError: { afterChunks: 4, code: "overloaded_error", message: "Overloaded" } },
      { text: "a b c", disconnectAfterChunks: 4 },
      { text: "a b c", endAfterChunks: 4 },
      { text: "a b c", malformedAt: 4 },
    );
    const got: { kind: string | undefined; retryAfterMs: number | undefined }[] = [];
    for (let i = 0; i < 10; i++) {
      const { error } = await runPass(adapter, makeRequest(target));
      got.push({ kind: error?.kind, retryAfterMs: error?.retryAfterMs });
      expect(errorSurface(error)).not.toContain(KEY);
    }
    expect(got.map((g) => g.kind)).toEqual(["rate_limited", "overloaded", "auth", "context_overflow", "quota", "server", "overloaded", "network", "network", "malformed_stream"]);
    expect(got[0]?.retryAfterMs).toBe(7000);
  });

  it("keeps reported input/cache usage when the stream is cut, estimating output", async () => {
    sim.enqueue({ text: "one two three", usage: { inputTokens: 77, outputTokens: 9, cacheReadTokens: 5 }, disconnectAfterChunks: 5 });
    const { error } = await runPass(adapter, makeRequest(target));
    expect(error?.kind).toBe("network");
    expect(error?.partialUsage).toMatchObject({ inputTokens: 77, cacheReadTokens: 5, estimated: true });
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
