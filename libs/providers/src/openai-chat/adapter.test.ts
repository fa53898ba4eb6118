import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startCountingProxy, startSimulator, type Simulator } from "@byok/testing";
import type { ProviderErrorKind, ProviderTarget } from "@byok/protocol";
import { completedOf, errorSurface, makeRequest, runPass, textOf } from "../test-support/helpers.js";
import { createOpenAIChatAdapter } from "./adapter.js";

const KEY = "sk-chat-secret-0123456789";
let sim: Simulator;
let target: ProviderTarget;
const adapter = createOpenAIChatAdapter();

beforeEach(async () => {
  sim = await startSimulator();
  target = { kind: "openai-chat", model: "deepseek-sim", baseUrl: `${sim.url}/v1`, apiKey: KEY, credentialsSource: "client" };
});
afterEach(() => sim.close());

describe("OpenAI Chat Completions adapter", () => {
  it("streams text and completes with normalized usage", async () => {
    sim.enqueue({ text: "Hello there, friend.", usage: { inputTokens: 90, outputTokens: 7, cacheReadTokens: 10, reasoningTokens: 0 } });
    const { events, error } = await runPass(adapter, makeRequest(target));
    expect(error).toBeUndefined();
    expect(events[0]).toEqual({ type: "item_added", itemId: "mc-1_1_msg0", kind: "text" });
    expect(textOf(events, "text_delta")).toBe("Hello there, friend.");
    expect(events.filter((e) => e.type === "item_done")).toEqual([{ type: "item_done", item: { kind: "text", id: "mc-1_1_msg0", text: "Hello there, friend." } }]);
    const done = completedOf(events);
    expect(done.endTurn).toBe(true);
    expect(done.stopReason).toBe("end_turn");
    expect(done.usage).toMatchObject({ inputTokens: 90, outputTokens: 7, cacheReadTokens: 10, cacheWriteTokens: 0, reasoningTokens: 0, estimated: false });

    const body = sim.requests[0]?.body;
    expect(body).toMatchObject({
      model: "deepseek-sim",
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: "system", content: "You are a helpful assistant." },
        { role: "user", content: "Say hello." },
      ],
    });
  });

  it("splits reasoning_content and `reasoning` fields into reasoning items", async () => {
    sim.enqueue(
      { reasoning: "Think first.", text: "Answer.", usage: { inputTokens: 5, outputTokens: 9, reasoningTokens: 4 } },
      { reasoning: "Other field.", reasoningField: "reasoning", text: "Ok." },
    );
    const a = await runPass(adapter, makeRequest(target));
    expect(textOf(a.events, "reasoning_delta")).toBe("Think first.");
    expect(textOf(a.events, "text_delta")).toBe("Answer.");
    const kinds = a.events.filter((e) => e.type === "item_done").map((e) => (e.type === "item_done" ? e.item.kind : ""));
    expect(kinds).toEqual(["reasoning", "text"]);
    expect(completedOf(a.events).usage).toMatchObject({ outputTokens: 9, reasoningTokens: 4 });
    const b = await runPass(adapter, makeRequest(target, { attempt: 2 }));
    expect(textOf(b.events, "reasoning_delta")).toBe("Other field.");
    expect(b.events[0]).toMatchObject({ type: "item_added", itemId: "mc-1_2_rs0", kind: "reasoning" });
  });

  it("splits <think> tags in content into reasoning, even when tags are cut across chunks", async () => {
    sim.enqueue({ text: ["<th", "ink>plan ", "it</thi", "nk>", "Final ", "answer"] });
    const { events } = await runPass(adapter, makeRequest(target));
    expect(textOf(events, "reasoning_delta")).toBe("plan it");
    expect(textOf(events, "text_delta")).toBe("Final answer");
    const done = events.filter((e) => e.type === "item_done");
    expect(done).toEqual([
      { type: "item_done", item: { kind: "reasoning", id: "mc-1_1_rs0", part: { text: "plan it" } } },
      { type: "item_done", item: { kind: "text", id: "mc-1_1_msg0", text: "Final answer" } },
    ]);
  });

  it("keeps <think> as text when the route turns tag splitting off", async () => {
    sim.enqueue({ text: "<think>x</think>y" });
    const { events } = await runPass(adapter, makeRequest({ ...target, options: { thinkTags: false } }));
    expect(textOf(events, "text_delta")).toBe("<think>x</think>y");
  });

  it("accumulates parallel tool calls by index with namespaced ids and ends without end of turn", async () => {
    sim.enqueue({
      text: "Let me look.",
      toolCalls: [
        { id: "call_a", name: "read_file", arguments: ['{"pa', 'th":"a.ts"}'] },
        { id: "call_b", name: "grep", arguments: '{"q":"x"}' },
      ],
    });
    const { events, error } = await runPass(
      adapter,
      makeRequest(target, { tools: [{ name: "read_file", description: "Read", parameters: { type: "object" } }] }),
    );
    expect(error).toBeUndefined();
    const added = events.filter((e) => e.type === "item_added" && e.kind === "tool_call");
    expect(added).toEqual([
      { type: "item_added", itemId: "mc-1_1_tc0", kind: "tool_call", toolName: "read_file" },
      { type: "item_added", itemId: "mc-1_1_tc1", kind: "tool_call", toolName: "grep" },
    ]);
    const argDeltas = events.filter((e) => e.type === "tool_call_delta" && e.itemId === "mc-1_1_tc0");
    expect(argDeltas.map((e) => (e.type === "tool_call_delta" ? e.argsDelta : ""))).toEqual(['{"pa', 'th":"a.ts"}']);
    const calls = events.flatMap((e) => (e.type === "item_done" && e.item.kind === "tool_call" ? [e.item.call] : []));
    expect(calls).toEqual([
      { id: "mc-1_1_tc0", name: "read_file", argumentsJson: '{"path":"a.ts"}' },
      { id: "mc-1_1_tc1", name: "grep", argumentsJson: '{"q":"x"}' },
    ]);
    // The text item is closed before the first tool call opens.
    const order = events.map((e) => (e.type === "item_done" ? `done:${e.item.id}` : e.type === "item_added" ? `add:${e.itemId}` : ""));
    expect(order.indexOf("done:mc-1_1_msg0")).toBeLessThan(order.indexOf("add:mc-1_1_tc0"));
    const done = completedOf(events);
    expect(done.endTurn).toBe(false);
    expect(done.stopReason).toBe("tool_use");
    expect(sim.requests[0]?.body?.["tools"]).toEqual([
      { type: "function", function: { name: "read_file", description: "Read", parameters: { type: "object" } } },
    ]);
  });

  it("maps history: assistant tool calls, tool results, reasoning replay only when asked", async () => {
    sim.enqueue({ text: "a" }, { text: "b" });
    const items = [
      { role: "user" as const, text: "q" },
      {
        role: "assistant" as const,
        text: "",
        reasoning: [{ text: "hidden plan" }],
        toolCalls: [{ id: "mc-0_1_tc0", name: "read_file", argumentsJson: '{"path":"a"}' }],
      },
      { role: "tool" as const, toolCallId: "mc-0_1_tc0", name: "read_file", output: "contents" },
    ];
    await runPass(adapter, makeRequest(target, { items }));
    await runPass(adapter, makeRequest({ ...target, options: { replayReasoning: "reasoning_content" } }, { items }));
    const [first, second] = sim.requests;
    expect(first?.body?.["messages"]).toEqual([
      { role: "system", content: "You are a helpful assistant." },
      { role: "user", content: "q" },
      { role: "assistant", content: null, tool_calls: [{ id: "mc-0_1_tc0", type: "function", function: { name: "read_file", arguments: '{"path":"a"}' } }] },
      { role: "tool", tool_call_id: "mc-0_1_tc0", content: "contents" },
    ]);
    expect((second?.body?.["messages"] as Record<string, unknown>[])[2]).toMatchObject({ reasoning_content: "hidden plan" });
  });

  it("maps reasoning effort, output cap and route extra body", async () => {
    sim.enqueue({ text: "a" });
    await runPass(
      adapter,
      makeRequest({ ...target, maxOutputTokens: 1000, options: { extraBody: { temperature: 0.2 } } }, { reasoningEffort: "disabled" }),
    );
    expect(sim.requests[0]?.body).toMatchObject({ reasoning_effort: "none", max_tokens: 1000, temperature: 0.2 });
  });

  it("estimates usage, marked as such, when the endpoint sends no usage chunk", async () => {
    sim.enqueue({ text: "12345678", usage: null });
    const { events } = await runPass(adapter, makeRequest(target));
    const u = completedOf(events).usage;
    expect(u.estimated).toBe(true);
    expect(u.outputTokens).toBe(2);
    expect(u.inputTokens).toBeGreaterThan(0);
  });

  it("reads DeepSeek's cache-hit field", async () => {
    sim.enqueue({ text: "x", rawUsage: { prompt_tokens: 100, completion_tokens: 5, total_tokens: 105, prompt_cache_hit_tokens: 60, prompt_cache_miss_tokens: 40 } });
    const { events } = await runPass(adapter, makeRequest(target));
    expect(completedOf(events).usage).toMatchObject({ inputTokens: 40, cacheReadTokens: 60, outputTokens: 5, estimated: false });
  });

  describe("errors", () => {
    const cases: { name: string; status: number; body?: unknown; headers?: Record<string, string>; kind: ProviderErrorKind; retryAfterMs?: number }[] = [
      { name: "401 → auth", status: 401, kind: "auth" },
      { name: "403 → auth", status: 403, kind: "auth" },
      { name: "429 + retry-after seconds", status: 429, headers: { "retry-after": "3" }, kind: "rate_limited", retryAfterMs: 3000 },
      { name: "429 + retry-after-ms", status: 429, headers: { "retry-after-ms": "250", "retry-after": "9" }, kind: "rate_limited", retryAfterMs: 250 },
      {
        name: "429 insufficient_quota → quota",
        status: 429,
        body: { error: { message: "You exceeded your current quota", type: "insufficient_quota", code: "insufficient_quota" } },
        kind: "quota",
      },
      { name: "402 → quota", status: 402, body: { error: { message: "Payment required" } }, kind: "quota" },
      {
        name: "400 context_length_exceeded",
        status: 400,
        body: { error: { message: "This model's maximum context length is 8192 tokens.", type: "invalid_request_error", code: "context_length_exceeded" } },
        kind: "context_overflow",
      },
      {
        name: "400 context message without code (vLLM)",
        status: 400,
        body: { object: "error", message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.", type: "BadRequestError", code: 400 },
        kind: "context_overflow",
      },
      {
        name: "400 content_filter (Azure)",
        status: 400,
        body: { error: { message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", code: "content_filter" } },
        kind: "content_policy",
      },
      { name: "400 → invalid_request", status: 400, kind: "invalid_request" },
      { name: "404 → not_found", status: 404, kind: "not_found" },
      { name: "500 → server", status: 500, kind: "server" },
      { name: "503 → server", status: 503, kind: "server" },
      { name: "529 → overloaded", status: 529, body: { error: { message: "Overloaded", type: "overloaded_error" } }, kind: "overloaded" },
    ];
    for (const c of cases) {
      it(c.name, async () => {
        sim.enqueue({ httpError: { status: c.status, ...(c.body ? { body: c.body } : {}), ...(c.headers ? { headers: c.headers } : {}) } });
        const { events, error } = await runPass(adapter, makeRequest(target));
        expect(events).toEqual([]);
        expect(error?.kind).toBe(c.kind);
        expect(error?.status).toBe(c.status);
        if (c.retryAfterMs !== undefined) expect(error?.retryAfterMs).toBe(c.retryAfterMs);
        expect(error?.partialUsage).toBeUndefined();
        expect(errorSurface(error)).not.toContain(KEY);
      });
    }

    it("429 with an HTTP-date retry-after", async () => {
      const at = new Date(Date.now() + 60_000).toUTCString();
      sim.enqueue({ httpError: { status: 429, headers: { "retry-after": at } } });
      const { error } = await runPass(adapter, makeRequest(target));
      expect(error?.kind).toBe("rate_limited");
      expect(error?.retryAfterMs).toBeGreaterThan(50_000);
      expect(error?.retryAfterMs).toBeLessThanOrEqual(60_000);
    });

    it("never repeats the key even when the vendor's message echoes it", async () => {
      sim.enqueue({ httpError: { status: 400, body: { error: { message: `Bad key format ${KEY} in header`, code: null } } } });
      const { error } = await runPass(adapter, makeRequest(target));
      expect(error?.kind).toBe("invalid_request");
      expect(error?.message).toContain("[redacted]");
      expect(errorSurface(error)).not.toContain(KEY);
    });

    it("connection refused → network", async () => {
      const dead = await startSimulator();
      const url = dead.url;
      await dead.close();
      const { error } = await runPass(adapter, makeRequest({ ...target, baseUrl: `${url}/v1` }));
      expect(error?.kind).toBe("network");
      expect(error?.retryable).toBe(true);
      expect(errorSurface(error)).not.toContain(KEY);
    });

    it("a disconnect mid-stream → network with estimated partial usage", async () => {
      sim.enqueue({ text: "one two three four five", disconnectAfterChunks: 3 });
      const { events, error } = await runPass(adapter, makeRequest(target));
      expect(textOf(events, "text_delta")).toBe("one two ");
      expect(error?.kind).toBe("network");
      expect(error?.partialUsage).toMatchObject({ estimated: true, outputTokens: 2 });
    });

    it("a stream that ends cleanly without finish_reason → network (never a silent success)", async () => {
      sim.enqueue({ text: "one two three", endAfterChunks: 2 });
      const { error } = await runPass(adapter, makeRequest(target));
      expect(error?.kind).toBe("network");
      expect(error?.partialUsage?.estimated).toBe(true);
    });

    it("a malformed event → malformed_stream", async () => {
      sim.enqueue({ text: "one two three", malformedAt: 2 });
      const { error } = await runPass(adapter, makeRequest(target));
      expect(error?.kind).toBe("malformed_stream");
      expect(error?.retryable).toBe(true);
    });

    it("an error event inside the stream is classified from its code", async () => {
      sim.enqueue(
        { text: "partial", streamError: { afterChunks: 2, code: "server_error", message: "upstream died" } },
        { text: "partial", streamError: { afterChunks: 1, code: "rate_limit_exceeded", message: "slow down" } },
      );
      expect((await runPass(adapter, makeRequest(target))).error?.kind).toBe("server");
      expect((await runPass(adapter, makeRequest(target))).error?.kind).toBe("rate_limited");
    });

    it("finish_reason content_filter → content_policy with partial usage", async () => {
      sim.enqueue({ text: "partial", finishReason: "content_filter" });
      const { error } = await runPass(adapter, makeRequest(target));
      expect(error?.kind).toBe("content_policy");
      expect(error?.retryable).toBe(false);
      expect(error?.partialUsage).toBeDefined();
    });

    it("a slow first byte past the route's timeout → timeout", async () => {
      sim.enqueue({ text: "late", firstByteDelayMs: 2_000 });
      const { error } = await runPass(adapter, makeRequest({ ...target, options: { timeoutMs: 50 } }));
      expect(error?.kind).toBe("timeout");
    });
  });

  describe("cancel", () => {
    it("abort mid-stream closes the connection: the simulator sees the disconnect", async () => {
      sim.enqueue({ text: "one two three four", stallAfterChunks: 3 });
      const ac = new AbortController();
      const { events, error } = await runPass(adapter, makeRequest(target, { signal: ac.signal }), (e) => {
        if (e.type === "text_delta" && e.text.includes("two")) ac.abort();
      });
      expect(error?.kind).toBe("cancelled");
      expect(error?.retryable).toBe(false);
      expect(error?.partialUsage?.estimated).toBe(true);
      expect(textOf(events, "text_delta")).toBe("one two ");
      await sim.waitFor((r) => r[0]?.clientDisconnected === true);
      expect(sim.requests[0]?.outcome).toBe("client_disconnected");
    });

    it("abort while waiting for the first byte", async () => {
      sim.enqueue({ text: "late", firstByteDelayMs: 60_000 });
      const ac = new AbortController();
      const pass = runPass(adapter, makeRequest(target, { signal: ac.signal }));
      await sim.waitForRequest(0);
      ac.abort();
      const { error } = await pass;
      expect(error?.kind).toBe("cancelled");
      await sim.waitFor((r) => r[0]?.clientDisconnected === true);
    });

    it("a consumer that stops iterating also closes the connection", async () => {
      sim.enqueue({ text: "one two three four", stallAfterChunks: 3 });
      for await (const e of adapter.stream(makeRequest(target))) {
        if (e.type === "text_delta") break;
      }
      await sim.waitFor((r) => r[0]?.clientDisconnected === true);
    });

    it("an already-aborted signal sends nothing", async () => {
      const ac = new AbortController();
      ac.abort();
      const { error } = await runPass(adapter, makeRequest(target, { signal: ac.signal }));
      expect(error?.kind).toBe("cancelled");
      expect(sim.requests).toHaveLength(0);
    });
  });

  describe("provider connections", () => {
    // A tool loop's model calls come one after another on the pool's connection. When the
    // body's terminating chunk comes after [DONE] (endDelayMs, as through a load balancer),
    // cancelling the body there makes undici close the socket and the next call pays a new
    // handshake; the reader drains to the end instead (shared/sse.ts, drainAfterDoneMs).
    async function connectionsFor(calls: number, options: Record<string, unknown>): Promise<number> {
      const proxy = await startCountingProxy(sim.url);
      try {
        const proxied: ProviderTarget = { ...target, baseUrl: `${proxy.url}/v1`, options };
        for (let attempt = 1; attempt <= calls; attempt++) {
          sim.enqueue({ text: `answer ${attempt}`, endDelayMs: 15 });
          const { events, error } = await runPass(adapter, makeRequest(proxied, { attempt }));
          expect(error).toBeUndefined();
          expect(textOf(events, "text_delta")).toBe(`answer ${attempt}`);
          // undici puts the socket back in its pool one I/O turn after the body ends; a call
          // started in the same turn opens a second connection whatever the reader does.
          await new Promise((resolve) => setImmediate(resolve));
        }
        return proxy.connections();
      } finally {
        await proxy.close();
      }
    }

    it("back-to-back calls reuse one connection when the terminating chunk comes after [DONE]", async () => {
      expect(await connectionsFor(5, {})).toBe(1);
    });

    // Every call after the first opens a new connection (undici may open two while the
    // cancelled one closes).
    it("drainAfterDoneMs: 0 cancels at [DONE], as the SDK does, and the connection is lost each time", async () => {
      expect(await connectionsFor(3, { drainAfterDoneMs: 0 })).toBeGreaterThanOrEqual(3);
    });

    it("a drain bound shorter than the terminator's delay gives the connection up", async () => {
      expect(await connectionsFor(3, { drainAfterDoneMs: 2 })).toBeGreaterThanOrEqual(3);
    });
  });

  it("sends the key only in the authorization header", async () => {
    sim.enqueue({ text: "x" });
    await runPass(adapter, makeRequest(target));
    expect(sim.findSecret(KEY, ["authorization"])).toEqual([]);
    expect(sim.requests[0]?.headers["authorization"]).toBe(`Bearer ${KEY}`);
  });
});
