// Same-API passthrough (docs/compat.md "Passthrough"): a request whose route target speaks the
// request's own API goes upstream as the caller sent it (only the route's fields rewritten) and
// the vendor's answer comes back as it was sent (under the gateway's id and the caller's model
// name), still metered per attempt with exact usage. The fields below are ones the translation
// drops or refuses; the strict simulator records what reached it.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCall, startHarness, type Harness } from "./harness.js";

const ADMIN_KEY = "admin-key-for-passthrough-tests-0123";
const SIM_KEY = "sk-passthrough-credential-0123456789";
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

describe("same-API passthrough on the compatible endpoints (embedded gateway, official SDKs)", () => {
  let h: Harness;
  let secret = "";

  const admin = (method: string, path: string, body?: unknown) => adminCall(h.gw, ADMIN_KEY, method, path, body);
  const openai = () => new OpenAI({ apiKey: secret, baseURL: `${h.gw.url}/v1`, maxRetries: 0 });
  const anthropic = () => new Anthropic({ apiKey: secret, baseURL: h.gw.url, maxRetries: 0 });
  const ledger = (id: string) => h.gw.store.ledger.forRequest("pt", id);
  const upstream = () => h.sim.requests.at(-1)!;

  beforeAll(async () => {
    h = await startHarness({ GATEWAY_AUTH_MODE: "api_key", GATEWAY_ADMIN_KEY: ADMIN_KEY });
    expect((await admin("POST", "/v1/tenants", { tenantId: "pt", name: "Passthrough" })).status).toBe(201);
    secret = (await admin("POST", "/v1/tenants/pt/keys", { name: "cli" })).body["secret"] as string;
    expect((await admin("PUT", "/v1/tenants/pt/credentials/sim", { credential: { kind: "api_key", apiKey: SIM_KEY } })).status).toBe(200);
    const target = (provider: string, model: string, base = `${h.sim.url}/v1`, extra: Record<string, unknown> = {}) => ({ provider, model, baseUrl: base, credentialsRef: "sim", ...extra });
    const routes: Record<string, unknown[]> = {
      "chat-model": [target("openai-chat", "sim-chat")],
      "capped-chat": [target("openai-chat", "sim-chat", `${h.sim.url}/v1`, { maxOutputTokens: 64 })],
      "claude-model": [target("anthropic", "claude-sonnet-4-5", h.sim.url)],
      "responses-model": [target("openai-responses", "gpt-5")],
      "chat-then-claude": [target("openai-chat", "sim-primary"), target("anthropic", "claude-sonnet-4-5", h.sim.url)],
    };
    for (const [modelId, targets] of Object.entries(routes)) expect((await admin("PUT", `/v1/tenants/pt/routes/${modelId}`, { targets })).status).toBe(200);
  });
  afterAll(async () => h?.close());

  // Fields the translation refuses (an image part, a named tool_choice) or drops (seed, logprobs, user, metadata, stop…).
  const chatBody = {
    messages: [
      { role: "developer" as const, content: "Be brief." },
      { role: "user" as const, content: [{ type: "text" as const, text: "What is in this picture?" }, { type: "image_url" as const, image_url: { url: `data:image/png;base64,${PIXEL}`, detail: "low" as const } }] },
    ],
    tools: [{ type: "function" as const, function: { name: "describe", description: "Describe", parameters: { type: "object", properties: { what: { type: "string" } } } } }],
    tool_choice: { type: "function" as const, function: { name: "describe" } },
    parallel_tool_calls: false,
    seed: 7,
    logprobs: true,
    top_logprobs: 2,
    user: "user-123",
    metadata: { team: "search" },
    stop: ["\n\n"],
    presence_penalty: 0.5,
    max_completion_tokens: 500,
  };

  it("Chat Completions to a Chat route, non-streaming: the caller's body reaches the vendor unchanged but for the model; the vendor's answer comes back whole", async () => {
    h.sim.enqueue({ toolCalls: [{ id: "call_vendor_1", name: "describe", arguments: '{"what":"a pixel"}' }], usage: { inputTokens: 120, outputTokens: 9 } });
    const r = await openai().chat.completions.create({ model: "chat-model", ...chatBody });
    expect(upstream().body).toEqual({ ...chatBody, model: "sim-chat", stream: false });
    expect(upstream().headers["authorization"]).toBe(`Bearer ${SIM_KEY}`);
    // The vendor's own fields (the translation renders neither system_fingerprint nor the vendor's call id).
    expect(r).toMatchObject({ object: "chat.completion", model: "chat-model", system_fingerprint: "fp_sim" });
    expect(r.id).toMatch(/^chatcmpl-[0-9a-f]{24}$/);
    expect(r.choices[0]!.message.tool_calls).toEqual([{ id: "call_vendor_1", type: "function", function: { name: "describe", arguments: '{"what":"a pixel"}' } }]);
    expect(r.usage).toMatchObject({ prompt_tokens: 120, completion_tokens: 9 });
    expect(await ledger(r.id)).toEqual([expect.objectContaining({ attempt: 1, provider: "openai-chat", upstreamModel: "sim-chat", route: "chat-model", inputTokens: 120, outputTokens: 9, estimated: false, outcome: "ok" })]);

    // The same request on a route whose provider speaks another API needs the translation, which refuses it.
    const translated = await openai().chat.completions.create({ model: "claude-model", ...chatBody }).catch((e: unknown) => e);
    expect(translated).toBeInstanceOf(OpenAI.BadRequestError);
    expect((translated as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/tool_choice: only "auto" and "none"/);
  });

  it("Chat Completions streaming: usage is always asked of the vendor for the ledger, and kept from a caller that did not ask for it", async () => {
    h.sim.enqueue({ text: ["The ", "pixel ", "is ", "white."], usage: { inputTokens: 80, outputTokens: 5 } });
    const { max_completion_tokens: _cap, tool_choice: _tc, tools: _t, ...rest } = chatBody;
    const stream = await openai().chat.completions.create({ model: "chat-model", ...rest, stream: true });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    expect(upstream().body).toEqual({ ...rest, model: "sim-chat", stream: true, stream_options: { include_usage: true } });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("The pixel is white.");
    expect(chunks.every((c) => c.system_fingerprint === "fp_sim" && c.model === "chat-model" && c.id === chunks[0]!.id && !("usage" in c))).toBe(true);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("stop");
    expect(await ledger(chunks[0]!.id)).toEqual([expect.objectContaining({ provider: "openai-chat", inputTokens: 80, outputTokens: 5, estimated: false, outcome: "ok" })]);
  });

  it("the route's fields still apply: its lower output cap replaces the caller's", async () => {
    h.sim.enqueue({ text: "short" });
    await openai().chat.completions.create({ model: "capped-chat", messages: [{ role: "user", content: "hi" }], max_completion_tokens: 5000, seed: 1 });
    expect(upstream().body).toEqual({ model: "sim-chat", messages: [{ role: "user", content: "hi" }], max_completion_tokens: 64, seed: 1, stream: false });
  });

  it("Messages to an Anthropic route, non-streaming and streaming: image blocks, a named tool_choice, top_k, stop sequences and metadata reach the vendor; its blocks and ids come back", async () => {
    const body = {
      max_tokens: 1024,
      system: [{ type: "text" as const, text: "Be brief.", cache_control: { type: "ephemeral" as const } }],
      messages: [{ role: "user" as const, content: [{ type: "image" as const, source: { type: "base64" as const, media_type: "image/png" as const, data: PIXEL } }, { type: "text" as const, text: "Describe it." }] }],
      tools: [{ name: "describe", description: "Describe", input_schema: { type: "object" as const, properties: { what: { type: "string" } } } }],
      tool_choice: { type: "tool" as const, name: "describe", disable_parallel_tool_use: true },
      top_k: 40,
      stop_sequences: ["END"],
      metadata: { user_id: "user-123" },
    };
    h.sim.enqueue({ toolCalls: [{ id: "toolu_vendor_1", name: "describe", arguments: '{"what":"pixel"}' }], usage: { inputTokens: 300, outputTokens: 20, cacheWriteTokens: 12 } });
    const m = await anthropic().messages.create({ model: "claude-model", ...body });
    expect(upstream().body).toEqual({ ...body, model: "claude-sonnet-4-5", stream: false });
    expect(m).toMatchObject({ model: "claude-model", stop_reason: "tool_use", content: [{ type: "tool_use", id: "toolu_vendor_1", name: "describe", input: { what: "pixel" } }] });
    expect(m.id).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(await ledger(m.id)).toEqual([expect.objectContaining({ provider: "anthropic", inputTokens: 300, outputTokens: 20, cacheWriteTokens: 12, estimated: false, outcome: "ok" })]);

    h.sim.enqueue({ text: ["A white", " pixel."], usage: { inputTokens: 310, outputTokens: 6 } });
    const { tool_choice: _tc, ...streamed } = body;
    const stream = anthropic().messages.stream({ model: "claude-model", ...streamed });
    const final = await stream.finalMessage();
    expect(upstream().body).toEqual({ ...streamed, model: "claude-sonnet-4-5", stream: true });
    expect(final).toMatchObject({ model: "claude-model", stop_reason: "end_turn", content: [{ type: "text", text: "A white pixel." }], usage: { output_tokens: 6 } });
    expect(await ledger(final.id)).toEqual([expect.objectContaining({ provider: "anthropic", inputTokens: 310, outputTokens: 6, outcome: "ok" })]);
  });

  it("Responses to a Responses route: include, text format, metadata and a named tool_choice reach the vendor; every response object in the stream carries the gateway's id", async () => {
    const body = {
      input: [{ role: "user" as const, content: [{ type: "input_text" as const, text: "Look it up." }, { type: "input_image" as const, image_url: `data:image/png;base64,${PIXEL}`, detail: "low" as const }] }],
      tools: [{ type: "function" as const, name: "lookup", parameters: { type: "object", properties: { q: { type: "string" } } }, strict: false }],
      tool_choice: { type: "function" as const, name: "lookup" },
      include: ["reasoning.encrypted_content" as const],
      text: { verbosity: "low" as const },
      metadata: { team: "search" },
      store: false,
    };
    h.sim.enqueue({ toolCalls: [{ name: "lookup", arguments: '{"q":"pixel"}' }], usage: { inputTokens: 70, outputTokens: 11 } });
    const stream = await openai().responses.create({ model: "responses-model", ...body, stream: true });
    const ids = new Set<string>();
    let completed: OpenAI.Responses.Response | undefined;
    for await (const ev of stream) {
      if ("response" in ev) ids.add(ev.response.id);
      if (ev.type === "response.completed") completed = ev.response;
    }
    expect(upstream().body).toEqual({ ...body, model: "gpt-5", stream: true });
    expect(ids.size).toBe(1);
    expect(completed).toMatchObject({ model: "responses-model", output: [expect.objectContaining({ type: "function_call", name: "lookup", arguments: '{"q":"pixel"}' })] });
    expect(await ledger(completed!.id)).toEqual([expect.objectContaining({ provider: "openai-responses", inputTokens: 70, outputTokens: 11, outcome: "ok" })]);
  });

  it("fails over from a passthrough target to a translated one before the first byte; a request without a translation is served by same-API targets only", async () => {
    h.sim.enqueue({ httpError: { status: 503 } }, { httpError: { status: 503 } }, { httpError: { status: 503 } }, { httpError: { status: 503 } }, { httpError: { status: 503 } }, { text: "from Claude" });
    const r = await openai().chat.completions.create({ model: "chat-then-claude", messages: [{ role: "user", content: "hi" }], seed: 3 });
    expect(r.choices[0]!.message.content).toBe("from Claude");
    expect(upstream().api).toBe("anthropic-messages");
    const rows = await ledger(r.id);
    expect(rows.map((x) => [x.provider, x.outcome])).toEqual([...Array.from({ length: 5 }, () => ["openai-chat", "retried"]), ["anthropic", "ok"]]);

    // The image part has no translation: the Anthropic fallback cannot take it, so the Chat target's failure is the answer.
    const before = h.sim.requests.length;
    for (let i = 0; i < 5; i++) h.sim.enqueue({ httpError: { status: 503 } });
    const down = await openai().chat.completions.create({ model: "chat-then-claude", messages: chatBody.messages }).catch((e: unknown) => e);
    expect(down).toMatchObject({ status: 503 });
    expect(h.sim.requests.slice(before).map((q) => q.api)).toEqual(Array.from({ length: 5 }, () => "openai-chat"));
  });
});
