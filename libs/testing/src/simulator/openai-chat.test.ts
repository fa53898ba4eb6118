import { afterEach, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { startSimulator, type Simulator } from "./index.js";

let sim: Simulator;
let client: OpenAI;
beforeEach(async () => {
  sim = await startSimulator();
  client = new OpenAI({ apiKey: "sk-test-secret", baseURL: `${sim.url}/v1`, maxRetries: 0, logLevel: "off" });
});
afterEach(() => sim.close());

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

describe("simulator: OpenAI Chat Completions", () => {
  it("streams role, reasoning, content, tool calls, finish and usage that the official SDK parses", async () => {
    sim.enqueue({
      reasoning: "Let me think.",
      text: "Hello world",
      toolCalls: [{ id: "call_1", name: "read_file", arguments: ['{"path":', '"a.ts"}'] }],
      usage: { inputTokens: 10, outputTokens: 20, cacheReadTokens: 5, reasoningTokens: 3 },
    });
    const stream = await client.chat.completions.create({
      model: "gpt-sim",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = await collect(stream);
    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    const deltas = chunks.flatMap((c) => c.choices.map((ch) => ch.delta as Record<string, unknown>));
    expect(deltas.map((d) => d["reasoning_content"] ?? "").join("")).toBe("Let me think.");
    expect(deltas.map((d) => d["content"] ?? "").join("")).toBe("Hello world");
    const toolDeltas = chunks.flatMap((c) => c.choices.flatMap((ch) => ch.delta.tool_calls ?? []));
    expect(toolDeltas[0]).toMatchObject({ index: 0, id: "call_1", function: { name: "read_file" } });
    expect(toolDeltas.map((t) => t.function?.arguments ?? "").join("")).toBe('{"path":"a.ts"}');
    const finish = chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter(Boolean);
    expect(finish).toEqual(["tool_calls"]);
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toMatchObject({
      prompt_tokens: 15,
      completion_tokens: 20,
      prompt_tokens_details: { cached_tokens: 5 },
      completion_tokens_details: { reasoning_tokens: 3 },
    });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);

    const req = sim.requests[0];
    expect(req?.api).toBe("openai-chat");
    expect(req?.body).toMatchObject({ model: "gpt-sim", stream: true });
    expect(req?.headers["authorization"]).toBe("Bearer sk-test-secret");
    expect(sim.findSecret("sk-test-secret", ["authorization"])).toEqual([]);
    expect(sim.findSecret("sk-test-secret")).toEqual([{ requestIndex: 0, where: { header: "authorization" } }]);
    expect((await sim.waitForEnd(0)).outcome).toBe("completed");
  });

  it("omits the usage chunk unless include_usage is requested, and when the script says null", async () => {
    sim.enqueue({ text: "a" }, { text: "b", usage: null });
    const a = await collect(await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true }));
    expect(a.every((c) => c.usage === undefined)).toBe(true);
    const b = await collect(
      await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true, stream_options: { include_usage: true } }),
    );
    expect(b.some((c) => c.usage)).toBe(false);
  });

  it("answers HTTP errors with the vendor's body and headers", async () => {
    sim.enqueue({ httpError: { status: 429, headers: { "retry-after": "2" } } });
    const err = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const rl = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect(rl.headers.get("retry-after")).toBe("2");
    expect(rl.code).toBe("rate_limit_exceeded");
  });

  it("reports an in-stream error as an APIError", async () => {
    sim.enqueue({ text: "partial answer", streamError: { afterChunks: 2, code: "server_error", message: "boom" } });
    const stream = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true });
    await expect(collect(stream)).rejects.toBeInstanceOf(OpenAI.APIError);
  });

  it("sends a malformed frame the SDK rejects", async () => {
    sim.enqueue({ text: "one two three", malformedAt: 2 });
    const stream = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true });
    await expect(collect(stream)).rejects.toThrow(/malformed/);
  });

  it("cuts the connection mid-stream", async () => {
    sim.enqueue({ text: "one two three four", disconnectAfterChunks: 2 });
    const stream = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true });
    await expect(collect(stream)).rejects.toThrow();
    expect((await sim.waitForEnd(0)).outcome).toBe("server_disconnected");
  });

  it("sees the client disconnect when the caller aborts a stalled stream", async () => {
    sim.enqueue({ text: "one two three", stallAfterChunks: 2 });
    const ac = new AbortController();
    const stream = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true }, { signal: ac.signal });
    const seen: ChatCompletionChunk[] = [];
    for await (const c of stream) {
      seen.push(c);
      if (seen.length === 2) ac.abort();
    }
    await sim.waitFor((r) => r[0]?.clientDisconnected === true);
    expect(sim.requests[0]?.outcome).toBe("client_disconnected");
  });

  it("delays the first byte and answers scripts from a function of the request", async () => {
    sim.enqueue((req) => ({ text: `echo ${String(req.body?.["model"])}`, firstByteDelayMs: 20 }));
    const chunks = await collect(await client.chat.completions.create({ model: "mirror", messages: [{ role: "user", content: "hi" }], stream: true }));
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("echo mirror");
  });

  it("answers non-streamed requests with a chat.completion", async () => {
    sim.enqueue({ text: "whole", toolCalls: [{ name: "f", arguments: "{}" }] });
    const done = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
    expect(done.choices[0]?.message.content).toBe("whole");
    expect(done.choices[0]?.finish_reason).toBe("tool_calls");
  });
});
