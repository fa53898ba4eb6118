import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "@byok/testing";
import type { ProviderTarget } from "@byok/protocol";
import { completedOf, errorSurface, makeRequest, runPass, textOf } from "../test-support/helpers.js";
import { createOpenAIResponsesAdapter } from "./adapter.js";

const KEY = "sk-resp-secret-0123456789";
let sim: Simulator;
let target: ProviderTarget;
const adapter = createOpenAIResponsesAdapter();

beforeEach(async () => {
  sim = await startSimulator();
  target = { kind: "openai-responses", model: "gpt-5", baseUrl: `${sim.url}/v1`, apiKey: KEY, credentialsSource: "client" };
});
afterEach(() => sim.close());

describe("OpenAI Responses adapter", () => {
  it("streams reasoning summaries, text and function calls; keeps encrypted reasoning for replay", async () => {
    sim.enqueue({
      reasoning: "Look at the file.",
      reasoningSignature: "ENC-BLOB-1",
      text: "Reading it.",
      toolCalls: [{ id: "call_x", name: "read_file", arguments: ['{"path":', '"a.ts"}'] }],
      usage: { inputTokens: 100, outputTokens: 40, cacheReadTokens: 50, cacheWriteTokens: 5, reasoningTokens: 20 },
    });
    const { events, error } = await runPass(adapter, makeRequest(target, { reasoningEffort: "high" }));
    expect(error).toBeUndefined();
    expect(textOf(events, "reasoning_delta")).toBe("Look at the file.");
    expect(textOf(events, "text_delta")).toBe("Reading it.");
    const done = events.flatMap((e) => (e.type === "item_done" ? [e.item] : []));
    expect(done).toEqual([
      { kind: "reasoning", id: "mc-1_1_rs0", part: { text: "Look at the file.", encryptedContent: "ENC-BLOB-1", providerItemId: "rs_sim1_0" } },
      { kind: "text", id: "mc-1_1_msg0", text: "Reading it." },
      { kind: "tool_call", id: "mc-1_1_tc0", call: { id: "mc-1_1_tc0", name: "read_file", argumentsJson: '{"path":"a.ts"}' } },
    ]);
    expect(events.find((e) => e.type === "item_added" && e.kind === "tool_call")).toEqual({ type: "item_added", itemId: "mc-1_1_tc0", kind: "tool_call", toolName: "read_file" });
    const c = completedOf(events);
    expect(c.endTurn).toBe(false);
    expect(c.stopReason).toBe("tool_use");
    expect(c.usage).toMatchObject({ inputTokens: 100, outputTokens: 40, cacheReadTokens: 50, cacheWriteTokens: 5, reasoningTokens: 20, estimated: false });
    expect(sim.requests[0]?.body).toMatchObject({
      model: "gpt-5",
      stream: true,
      store: false,
      include: ["reasoning.encrypted_content"],
      reasoning: { effort: "high", summary: "auto" },
      instructions: "You are a helpful assistant.",
      input: [{ type: "message", role: "user", content: "Say hello." }],
    });
  });

  it("replays encrypted reasoning, tool calls and results on the next pass", async () => {
    sim.enqueue({ text: "done" });
    await runPass(
      adapter,
      makeRequest(target, {
        items: [
          { role: "user", text: "q" },
          {
            role: "assistant",
            text: "Reading it.",
            reasoning: [
              { text: "Look.", encryptedContent: "ENC-BLOB-1", providerItemId: "rs_1" },
              { text: "From another provider", signature: "anthropic-sig" },
            ],
            toolCalls: [{ id: "mc-1_1_tc0", name: "read_file", argumentsJson: "{}" }],
          },
          { role: "tool", toolCallId: "mc-1_1_tc0", name: "read_file", output: "file body" },
        ],
      }),
    );
    expect(sim.requests[0]?.body?.["input"]).toEqual([
      { type: "message", role: "user", content: "q" },
      { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "Look." }], encrypted_content: "ENC-BLOB-1" },
      { type: "message", role: "assistant", content: "Reading it." },
      { type: "function_call", call_id: "mc-1_1_tc0", name: "read_file", arguments: "{}" },
      { type: "function_call_output", call_id: "mc-1_1_tc0", output: "file body" },
    ]);
  });

  it("does not ask non-reasoning models for reasoning", async () => {
    sim.enqueue({ text: "x" });
    await runPass(adapter, makeRequest({ ...target, model: "gpt-4.1" }));
    expect(sim.requests[0]?.body?.["reasoning"]).toBeUndefined();
    expect(sim.requests[0]?.body?.["include"]).toBeUndefined();
  });

  it("ends a max_output_tokens-incomplete response normally with stopReason max_tokens", async () => {
    sim.enqueue({ text: "cut short", finishReason: "max_output_tokens" });
    const c = completedOf((await runPass(adapter, makeRequest(target))).events);
    expect(c.stopReason).toBe("max_tokens");
    expect(c.endTurn).toBe(true);
  });

  it("maps response.failed, content-filter incompletes, HTTP errors and truncation", async () => {
    sim.enqueue(
      { text: "a b", streamError: { afterChunks: 4, code: "server_error", message: "oops" } },
      { text: "a b", streamError: { afterChunks: 2, code: "context_length_exceeded", message: "Your input exceeds the context window of this model." } },
      { text: "bad", finishReason: "content_filter" },
      { httpError: { status: 429, headers: { "retry-after": "1" } } },
      { httpError: { status: 401 } },
      { text: "one two three", endAfterChunks: 4 },
      { text: "one two three", disconnectAfterChunks: 5 },
      { text: "one two three", malformedAt: 3 },
    );
    const kinds: (string | undefined)[] = [];
    for (let i = 0; i < 8; i++) {
      const { error } = await runPass(adapter, makeRequest(target));
      kinds.push(error?.kind);
      expect(errorSurface(error)).not.toContain(KEY);
    }
    expect(kinds).toEqual(["server", "context_overflow", "content_policy", "rate_limited", "auth", "network", "network", "malformed_stream"]);
  });

  it("cancel closes the connection", async () => {
    sim.enqueue({ text: "one two three four", stallAfterChunks: 6 });
    const ac = new AbortController();
    const { error } = await runPass(adapter, makeRequest(target, { signal: ac.signal }), (e) => {
      if (e.type === "text_delta") ac.abort();
    });
    expect(error?.kind).toBe("cancelled");
    await sim.waitFor((r) => r[0]?.clientDisconnected === true);
  });
});
