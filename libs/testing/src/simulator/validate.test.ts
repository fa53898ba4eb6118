// The simulator refuses what the vendors refuse, with their own status and wording.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "./index.js";

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ contextWindows: { "tiny-model": 50, "us.anthropic.tiny-v1:0": 50 } });
});
afterAll(() => sim.close());

async function post(path: string, body: unknown): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(`${sim.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

const chatPending = {
  model: "gpt-4o",
  stream: true,
  messages: [
    { role: "user", content: "read a.ts" },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "Read", arguments: "{}" } }] },
    { role: "user", content: "next" },
  ],
};
const anthropicPending = {
  model: "claude-sonnet-4-5",
  max_tokens: 100,
  stream: true,
  messages: [
    { role: "user", content: [{ type: "text", text: "read a.ts" }] },
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "Read", input: {} }] },
    { role: "user", content: [{ type: "text", text: "next" }] },
  ],
};

describe("unanswered tool calls", () => {
  it("OpenAI Chat Completions (and Azure) answer 400 naming the call ids", async () => {
    for (const path of ["/v1/chat/completions", "/openai/deployments/d1/chat/completions"]) {
      const before = sim.pending;
      const r = await post(path, chatPending);
      expect(r.status).toBe(400);
      expect(JSON.parse(r.text)).toEqual({
        error: {
          message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
          type: "invalid_request_error",
          param: "messages.[1].role",
          code: null,
        },
      });
      expect(sim.pending).toBe(before);
    }
    const orphan = await post("/v1/chat/completions", { model: "gpt-4o", messages: [{ role: "user", content: "x" }, { role: "tool", tool_call_id: "nope", content: "r" }] });
    expect(orphan.status).toBe(400);
    expect(orphan.text).toContain("messages with role 'tool' must be a response to a preceeding message with 'tool_calls'");
  });

  it("OpenAI Responses answers 400 `No tool output found for function call …`", async () => {
    const r = await post("/v1/responses", {
      model: "gpt-5",
      stream: true,
      input: [
        { type: "message", role: "user", content: "read" },
        { type: "function_call", call_id: "call_9", name: "Read", arguments: "{}" },
        { type: "message", role: "user", content: "next" },
      ],
    });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toEqual({ error: { message: "No tool output found for function call call_9.", type: "invalid_request_error", param: "input", code: null } });
  });

  it("Anthropic answers 400 invalid_request_error `tool_use ids were found without tool_result blocks immediately after`", async () => {
    const r = await post("/v1/messages", anthropicPending);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatchObject({
      type: "error",
      error: {
        type: "invalid_request_error",
        message: "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
      },
    });
  });

  it("Bedrock answers a ValidationException wrapping the model's message", async () => {
    const { model: _m, stream: _s, ...body } = anthropicPending;
    const r = await post("/model/us.anthropic.claude-sonnet-4-5-v1%3A0/invoke-with-response-stream", { ...body, anthropic_version: "bedrock-2023-05-31" });
    expect(r.status).toBe(400);
    expect(r.headers.get("x-amzn-errortype")).toMatch(/^ValidationException/);
    expect(JSON.parse(r.text).message).toMatch(/^The model returned the following errors: messages\.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1\./);
  });

  it("accepts calls that are answered", async () => {
    sim.enqueue({ text: "fine" });
    const r = await post("/v1/chat/completions", {
      ...chatPending,
      messages: [...chatPending.messages.slice(0, 2), { role: "tool", tool_call_id: "call_1", content: "x" }, { role: "user", content: "next" }],
    });
    expect(r.status).toBe(200);
  });
});

describe("context window", () => {
  const long = "word ".repeat(100);
  it("each vendor answers an oversized prompt with its own context-length error", async () => {
    const chat = await post("/v1/chat/completions", { model: "tiny-model", stream: true, messages: [{ role: "user", content: long }] });
    expect(chat.status).toBe(400);
    expect(JSON.parse(chat.text).error).toMatchObject({ code: "context_length_exceeded", param: "messages", type: "invalid_request_error" });
    expect(JSON.parse(chat.text).error.message).toMatch(/^This model's maximum context length is 50 tokens\. However, your messages resulted in \d+ tokens\./);

    const responses = await post("/v1/responses", { model: "tiny-model", stream: true, input: long });
    expect(JSON.parse(responses.text).error).toEqual({
      message: "Your input exceeds the context window of this model. Please adjust your input and try again.",
      type: "invalid_request_error",
      param: "input",
      code: "context_length_exceeded",
    });

    const anthropic = await post("/v1/messages", { model: "tiny-model", max_tokens: 10, stream: true, messages: [{ role: "user", content: long }] });
    expect(anthropic.status).toBe(400);
    expect(JSON.parse(anthropic.text).error.message).toMatch(/^prompt is too long: \d+ tokens > 50 maximum$/);

    const bedrock = await post("/model/us.anthropic.tiny-v1%3A0/invoke-with-response-stream", { max_tokens: 10, messages: [{ role: "user", content: long }] });
    expect(bedrock.status).toBe(400);
    expect(JSON.parse(bedrock.text)).toEqual({ message: "The model returned the following errors: Input is too long for requested model." });
  });
});

describe("empty conversations and token counting", () => {
  it("Chat Completions and Messages refuse an empty messages array with the vendors' errors", async () => {
    const chat = await post("/v1/chat/completions", { model: "gpt-4o", messages: [] });
    expect(chat.status).toBe(400);
    expect(JSON.parse(chat.text)).toEqual({ error: { message: expect.stringMatching(/^Invalid 'messages': empty array/), type: "invalid_request_error", param: "messages", code: "empty_array" } });
    for (const path of ["/v1/messages", "/v1/messages/count_tokens"]) {
      const r = await post(path, { model: "claude-sonnet-4-5", max_tokens: 10, messages: [] });
      expect(r.status).toBe(400);
      expect(JSON.parse(r.text)).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: "messages: at least one message is required" } });
    }
  });

  it("count_tokens answers a quarter of the body's length, recorded as its own API", async () => {
    const body = { model: "claude-sonnet-4-5", messages: [{ role: "user", content: "x".repeat(100) }] };
    const r = await post("/v1/messages/count_tokens", body);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ input_tokens: Math.ceil(JSON.stringify(body).length / 4) });
    expect(sim.requests.at(-1)!.api).toBe("anthropic-count-tokens");
  });
});
