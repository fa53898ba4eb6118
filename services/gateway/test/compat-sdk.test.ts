// Issue 15 through the embedded gateway: the official `openai` and `@anthropic-ai/sdk` clients
// against /v1/chat/completions, /v1/responses, /v1/messages and /v1/messages/count_tokens,
// authenticated with a tenant's gateway key, served by the tenant's routes (translated across
// vendors where the route's provider speaks another API), and the ledger rows they produce.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withinOneMinuteWindow } from "@byok/testing";
import { adminCall, startHarness, type Harness } from "./harness.js";

const ADMIN_KEY = "admin-key-for-compat-tests-0123456789";
const SIM_KEY = "sk-compat-tenant-credential-0123456789";

describe("OpenAI- and Anthropic-compatible endpoints (embedded gateway, official SDKs)", () => {
  let h: Harness;
  let secret = "";
  let keyId = "";

  const admin = (method: string, path: string, body?: unknown) => adminCall(h.gw, ADMIN_KEY, method, path, body);

  const openai = (key = secret) => new OpenAI({ apiKey: key, baseURL: `${h.gw.url}/v1`, maxRetries: 0 });
  const anthropic = (key = secret) => new Anthropic({ apiKey: key, baseURL: h.gw.url, maxRetries: 0 });
  const ledger = (id: string) => h.gw.store.ledger.forRequest("compat", id);

  beforeAll(async () => {
    // A long route cache: the last test shows this process's own admin writes apply at once.
    h = await startHarness({ GATEWAY_AUTH_MODE: "api_key", GATEWAY_ADMIN_KEY: ADMIN_KEY, GATEWAY_ROUTE_CACHE_MS: "300000" });
    expect((await admin("POST", "/v1/tenants", { tenantId: "compat", name: "Compat" })).status).toBe(201);
    expect((await admin("POST", "/v1/tenants/compat/users", { userId: "alice" })).status).toBe(201);
    const key = await admin("POST", "/v1/tenants/compat/keys", { name: "alice-cli", userId: "alice" });
    secret = key.body["secret"] as string;
    keyId = (key.body["key"] as { keyId: string }).keyId;
    expect((await admin("PUT", "/v1/tenants/compat/credentials/sim", { credential: { kind: "api_key", apiKey: SIM_KEY } })).status).toBe(200);
    const target = (provider: string, model: string, base = `${h.sim.url}/v1`) => ({ provider, model, baseUrl: base, credentialsRef: "sim" });
    const routes: Record<string, unknown[]> = {
      "chat-model": [target("openai-chat", "sim-chat")],
      "claude-model": [target("anthropic", "claude-sonnet-4-5", h.sim.url)],
      "responses-model": [target("openai-responses", "gpt-5")],
      "failover-model": [target("openai-chat", "sim-primary"), target("anthropic", "claude-sonnet-4-5", h.sim.url)],
    };
    for (const [modelId, targets] of Object.entries(routes)) expect((await admin("PUT", `/v1/tenants/compat/routes/${modelId}`, { targets })).status).toBe(200);
    expect((await admin("POST", "/v1/prices", { provider: "anthropic", model: "claude-sonnet-4-5", inputPerMTok: 3_000_000, outputPerMTok: 15_000_000 })).status).toBe(201);
    expect((await admin("POST", "/v1/prices", { provider: "openai-chat", model: "sim-chat", inputPerMTok: 2_000_000, outputPerMTok: 8_000_000 })).status).toBe(201);
  });
  afterAll(async () => h?.close());

  it("Chat Completions, non-streaming, translated to an Anthropic route: the answer, exact usage, one priced ledger row", async () => {
    h.sim.enqueue({ text: "Bonjour from Claude", usage: { inputTokens: 1000, outputTokens: 200, cacheReadTokens: 100 } });
    const r = await openai().chat.completions.create({ model: "claude-model", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hi" }], max_tokens: 500 });
    expect(r.object).toBe("chat.completion");
    expect(r.choices[0]!.message.content).toBe("Bonjour from Claude");
    expect(r.choices[0]!.finish_reason).toBe("stop");
    expect(r.usage).toMatchObject({ prompt_tokens: 1100, completion_tokens: 200, total_tokens: 1300, prompt_tokens_details: { cached_tokens: 100 } });
    const upstream = h.sim.requests.at(-1)!;
    expect(upstream.api).toBe("anthropic-messages");
    expect(upstream.body).toMatchObject({ model: "claude-sonnet-4-5", max_tokens: 500 });
    expect(upstream.headers["authorization"]).toBe(`Bearer ${SIM_KEY}`);
    const rows = await ledger(r.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      tenantId: "compat", userId: "alice", keyId, requestId: r.id, attempt: 1, provider: "anthropic", upstreamModel: "claude-sonnet-4-5", route: "claude-model",
      credentialsSource: "gateway", inputTokens: 1000, outputTokens: 200, cacheReadTokens: 100, estimated: false, priceVersion: 1, costMicroUsd: 3000 + 3000, outcome: "ok",
    });
    // Non-streaming: nothing reaches the caller before the provider finished, so no gateway TTFT overhead.
    expect(rows[0]!.ttftOverheadUs).toBeUndefined();
  });

  it("Chat Completions, streaming with tools and include_usage, then the tool result goes back upstream", async () => {
    h.sim.enqueue({ text: "Let me look.", toolCalls: [{ name: "get_weather", arguments: ['{"city":', '"Paris"}'] }], usage: { inputTokens: 50, outputTokens: 20 } });
    const tools = [{ type: "function" as const, function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
    const stream = await openai().chat.completions.create({ model: "chat-model", messages: [{ role: "user", content: "Weather in Paris?" }], tools, stream: true, stream_options: { include_usage: true } });
    let text = "";
    const calls: { id?: string; name?: string; args: string }[] = [];
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let id = "";
    for await (const chunk of stream) {
      id = chunk.id;
      if (chunk.usage) usage = chunk.usage;
      const c = chunk.choices[0];
      if (!c) continue;
      text += c.delta.content ?? "";
      for (const tc of c.delta.tool_calls ?? []) {
        calls[tc.index] ??= { args: "" };
        if (tc.id) calls[tc.index]!.id = tc.id;
        if (tc.function?.name) calls[tc.index]!.name = tc.function.name;
        calls[tc.index]!.args += tc.function?.arguments ?? "";
      }
      finish = c.finish_reason ?? finish;
    }
    expect(text).toBe("Let me look.");
    expect(calls).toEqual([{ id: expect.any(String), name: "get_weather", args: '{"city":"Paris"}' }]);
    expect(finish).toBe("tool_calls");
    expect(usage).toMatchObject({ prompt_tokens: 50, completion_tokens: 20, total_tokens: 70 });
    const upstreamTools = (h.sim.requests.at(-1)!.body as { tools: { function: { name: string } }[] }).tools;
    expect(upstreamTools.map((t) => t.function.name)).toEqual(["get_weather"]);
    const streamed = (await ledger(id))[0]!;
    expect(streamed).toMatchObject({ provider: "openai-chat", inputTokens: 50, outputTokens: 20, costMicroUsd: 100 + 160, outcome: "ok" });
    // Streaming: the provider's first event to the first byte written to the caller, measured.
    expect(streamed.ttftOverheadUs).toBeGreaterThanOrEqual(0);
    expect(streamed.ttftOverheadUs).toBeLessThan(streamed.durationMs * 1000 + 1000);

    h.sim.enqueue({ text: "It is sunny." });
    const call = calls[0]!;
    const second = await openai().chat.completions.create({
      model: "chat-model",
      tools,
      messages: [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: "Let me look.", tool_calls: [{ id: call.id!, type: "function", function: { name: "get_weather", arguments: call.args } }] },
        { role: "tool", tool_call_id: call.id!, content: "sunny, 21°C" },
      ],
    });
    expect(second.choices[0]!.message.content).toBe("It is sunny.");
    const sent = h.sim.requests.at(-1)!.body as { messages: { role: string; tool_call_id?: string; content?: unknown }[] };
    expect(sent.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: call.id, content: "sunny, 21°C" });
  });

  it("Responses, non-streaming and streaming, on a Responses route", async () => {
    h.sim.enqueue({ text: "Four.", reasoning: "2+2", usage: { inputTokens: 30, outputTokens: 12, reasoningTokens: 5 } });
    const r = await openai().responses.create({ model: "responses-model", input: "What is 2+2?", instructions: "Answer in one word." });
    expect(r.status).toBe("completed");
    expect(r.output_text).toBe("Four.");
    expect(r.usage).toMatchObject({ input_tokens: 30, output_tokens: 12, output_tokens_details: { reasoning_tokens: 5 } });
    expect(h.sim.requests.at(-1)!.api).toBe("openai-responses");
    expect((await ledger(r.id))[0]).toMatchObject({ provider: "openai-responses", upstreamModel: "gpt-5", inputTokens: 30, outputTokens: 12, reasoningTokens: 5 });

    h.sim.enqueue({ toolCalls: [{ name: "lookup", arguments: '{"q":"x"}' }] });
    const stream = await openai().responses.create({
      model: "responses-model", input: [{ role: "user", content: "look x up" }], stream: true,
      tools: [{ type: "function", name: "lookup", parameters: { type: "object", properties: { q: { type: "string" } } }, strict: false }],
    });
    const types: string[] = [];
    let completed: OpenAI.Responses.Response | undefined;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === "response.completed") completed = ev.response;
    }
    expect(types[0]).toBe("response.created");
    expect(types).toContain("response.function_call_arguments.delta");
    expect(types.at(-1)).toBe("response.completed");
    expect(completed!.output).toEqual([expect.objectContaining({ type: "function_call", name: "lookup", arguments: '{"q":"x"}' })]);
  });

  it("Messages, non-streaming with thinking and tools, on an Anthropic route: thinking blocks with their signature, tool_use, usage", async () => {
    h.sim.enqueue({ reasoning: "Need the tool.", reasoningSignature: "sig-abc", toolCalls: [{ name: "search", arguments: '{"q":"gateway"}' }], usage: { inputTokens: 400, outputTokens: 80, cacheWriteTokens: 40 } });
    const m = await anthropic().messages.create({
      model: "claude-model", max_tokens: 4096, thinking: { type: "enabled", budget_tokens: 2048 },
      messages: [{ role: "user", content: "search for gateway" }],
      tools: [{ name: "search", description: "web search", input_schema: { type: "object", properties: { q: { type: "string" } } } }],
    });
    expect(m.type).toBe("message");
    expect(m.stop_reason).toBe("tool_use");
    expect(m.content).toEqual([
      { type: "thinking", thinking: "Need the tool.", signature: "sig-abc" },
      { type: "tool_use", id: expect.any(String), name: "search", input: { q: "gateway" } },
    ]);
    expect(m.usage).toMatchObject({ input_tokens: 400, output_tokens: 80, cache_creation_input_tokens: 40 });
    expect(h.sim.requests.at(-1)!.body).toMatchObject({ thinking: { type: "enabled", budget_tokens: 2048 }, max_tokens: 4096 });
    expect((await ledger(m.id))[0]).toMatchObject({ provider: "anthropic", inputTokens: 400, outputTokens: 80, cacheWriteTokens: 40, outcome: "ok" });
  });

  it("Messages, streaming, translated to a Chat Completions route: the SDK's final message", async () => {
    h.sim.enqueue({ text: ["Hello", " there"], usage: { inputTokens: 9, outputTokens: 3 } });
    const stream = anthropic().messages.stream({ model: "chat-model", max_tokens: 256, system: "Greet.", messages: [{ role: "user", content: "hi" }] });
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: "text", text: "Hello there", citations: null }].map(({ citations: _c, ...b }) => expect.objectContaining(b)));
    expect(final.stop_reason).toBe("end_turn");
    expect(final.usage.output_tokens).toBe(3);
    expect(h.sim.requests.at(-1)!.api).toBe("openai-chat");
    expect((await ledger(final.id))[0]).toMatchObject({ provider: "openai-chat", inputTokens: 9, outputTokens: 3 });
  });

  it("count_tokens asks an Anthropic route's vendor, and counts with the family's tokenizer for an OpenAI route", async () => {
    const sent = { system: "Be brief.", messages: [{ role: "user" as const, content: "x".repeat(400) }], tools: [{ name: "search", input_schema: { type: "object" as const, properties: {} } }] };
    const r = await anthropic().messages.countTokens({ model: "claude-model", ...sent });
    const counted = h.sim.requests.at(-1)!;
    expect(counted.api).toBe("anthropic-count-tokens");
    expect(counted.body).toEqual({ ...sent, model: "claude-sonnet-4-5" });
    expect(counted.headers["authorization"]).toBe(`Bearer ${SIM_KEY}`);
    // The simulator's own count (a quarter of the body it received), not the gateway's estimate.
    expect(r.input_tokens).toBe(Math.ceil(counted.rawBody.length / 4));

    // gpt-5 counts with o200k_base: 10 tokens, where four characters per token would make it 15.
    const before = h.sim.requests.length;
    const text = "Tokenizers count words, not characters: internationalization";
    const o = await anthropic().messages.countTokens({ model: "responses-model", messages: [{ role: "user", content: text }] });
    expect(o.input_tokens).toBe(10);
    expect(h.sim.requests.length).toBe(before);

    const missing = await anthropic().messages.countTokens({ model: "claude-model", messages: [] }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(Anthropic.BadRequestError);
  });

  it("fails over to the next target before the first byte: one ledger row per attempt", async () => {
    h.sim.enqueue({ httpError: { status: 401 } }, { text: "served by the second target" });
    const r = await openai().chat.completions.create({ model: "failover-model", messages: [{ role: "user", content: "hi" }] });
    expect(r.choices[0]!.message.content).toBe("served by the second target");
    const rows = await ledger(r.id);
    expect(rows.map((x) => [x.attempt, x.provider, x.outcome])).toEqual([[1, "openai-chat", "retried"], [2, "anthropic", "ok"]]);
  });

  it("answers errors in each vendor's shape: unknown model 404, bad key 401, bad body 400, provider failure 5xx", async () => {
    const notFound = await openai().chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(OpenAI.NotFoundError);
    expect(notFound).toMatchObject({ status: 404, code: "model_not_found", type: "invalid_request_error", param: "model" });
    const aNotFound = await anthropic().messages.create({ model: "no-such-model", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(aNotFound).toBeInstanceOf(Anthropic.NotFoundError);
    expect((aNotFound as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({ type: "error", error: { type: "not_found_error" } });
    expect((await h.gw.store.ledger.dailyRefusals("compat")).reduce((n, r) => n + r.unknownModel, 0)).toBe(2);

    const badKey = await openai("byok_000000000000_" + "0".repeat(64)).chat.completions.create({ model: "chat-model", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(badKey).toBeInstanceOf(OpenAI.AuthenticationError);
    const aBadKey = await anthropic("nope").messages.create({ model: "chat-model", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(aBadKey).toBeInstanceOf(Anthropic.AuthenticationError);

    const badBody = await openai().chat.completions.create({ model: "chat-model", messages: [] }).catch((e: unknown) => e);
    expect(badBody).toBeInstanceOf(OpenAI.BadRequestError);
    expect((badBody as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/messages/);
    // x-api-key (what Anthropic clients such as Claude Code send) authenticates too.
    const missingMax = await fetch(`${h.gw.url}/v1/messages`, { method: "POST", headers: { "x-api-key": secret, "content-type": "application/json" }, body: JSON.stringify({ model: "claude-model", messages: [{ role: "user", content: "hi" }] }) });
    expect(missingMax.status).toBe(400);
    expect(await missingMax.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: expect.stringMatching(/max_tokens/) } });

    // A fatal provider failure (the upstream rejects the gateway's credential) after which no target is left.
    h.sim.enqueue({ httpError: { status: 401 } });
    const upstream = await openai().chat.completions.create({ model: "chat-model", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(upstream).toBeInstanceOf(OpenAI.APIError);
    expect((upstream as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect(JSON.stringify(upstream)).not.toContain(SIM_KEY);
  });

  it("a failure after the first chunk ends the stream with the vendor's in-stream error; the attempt is in the ledger as failed", async () => {
    h.sim.enqueue({ text: "partial answer that", streamError: { afterChunks: 2, code: "server_error", message: "boom" } });
    const stream = await openai().chat.completions.create({ model: "chat-model", messages: [{ role: "user", content: "hi" }], stream: true });
    let id = "";
    let text = "";
    const err = await (async () => {
      for await (const chunk of stream) {
        id = chunk.id;
        text += chunk.choices[0]?.delta.content ?? "";
      }
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(text.length).toBeGreaterThan(0);
    const rows = await ledger(id);
    expect(rows.map((r) => r.outcome)).toEqual(["failed"]);

    h.sim.enqueue({ text: "thinking about", streamError: { afterChunks: 3, code: "overloaded_error", message: "Overloaded" } });
    const aStream = anthropic().messages.stream({ model: "claude-model", max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
    const aErr = await aStream.finalMessage().catch((e: unknown) => e);
    expect(aErr).toBeInstanceOf(Anthropic.APIError);
    expect(JSON.stringify((aErr as InstanceType<typeof Anthropic.APIError>).error)).toMatch(/overloaded_error|api_error/);
  });

  it("budgets and rate limits apply: an exhausted budget is a 429 in each vendor's shape, before any provider call", async () => {
    expect((await admin("POST", "/v1/tenants", { tenantId: "broke", name: "Broke", limits: { tenant: { monthlyCostMicroUsd: 1 } } })).status).toBe(201);
    const key = await admin("POST", "/v1/tenants/broke/keys", { name: "k" });
    expect((await admin("PUT", "/v1/tenants/broke/credentials/sim", { credential: { kind: "api_key", apiKey: SIM_KEY } })).status).toBe(200);
    expect((await admin("PUT", "/v1/tenants/broke/routes/chat-model", { targets: [{ provider: "openai-chat", model: "sim-chat", baseUrl: `${h.sim.url}/v1`, credentialsRef: "sim" }] })).status).toBe(200);
    const before = h.sim.requests.length;
    const e = await openai(key.body["secret"] as string).chat.completions.create({ model: "chat-model", messages: [{ role: "user", content: "hi" }] }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(OpenAI.RateLimitError);
    expect(e).toMatchObject({ status: 429, code: "insufficient_quota" });
    const a = await anthropic(key.body["secret"] as string).messages.create({ model: "chat-model", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }).catch((x: unknown) => x);
    expect(a).toBeInstanceOf(Anthropic.RateLimitError);
    expect(h.sim.requests.length).toBe(before);
    // Refusals write no ledger row (no provider attempt) but a refusal row each, for the dashboard.
    const refused = await h.gw.store.ledger.dailyRefusals("broke");
    expect(refused.map((r) => [r.budgetExhausted, r.rateLimited, r.unknownModel])).toEqual([[2, 0, 0]]);
  });

  it("an unpriced model under a cost budget is a 403 in each vendor's shape naming the model, before any provider call", async () => {
    expect((await admin("POST", "/v1/tenants", { tenantId: "unpriced", name: "Unpriced", limits: { tenant: { monthlyCostMicroUsd: 1_000_000_000 } } })).status).toBe(201);
    const key = (await admin("POST", "/v1/tenants/unpriced/keys", { name: "k" })).body["secret"] as string;
    expect((await admin("PUT", "/v1/tenants/unpriced/credentials/sim", { credential: { kind: "api_key", apiKey: SIM_KEY } })).status).toBe(200);
    expect((await admin("PUT", "/v1/tenants/unpriced/routes/chat-model", { targets: [{ provider: "openai-chat", model: "sim-no-price", baseUrl: `${h.sim.url}/v1`, credentialsRef: "sim" }] })).status).toBe(200);
    const before = h.sim.requests.length;
    const e = await openai(key).chat.completions.create({ model: "chat-model", messages: [{ role: "user", content: "hi" }] }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(e).toMatchObject({ status: 403, type: "invalid_request_error" });
    expect((e as Error).message).toMatch(/sim-no-price .*price set openai-chat sim-no-price/);
    const a = await anthropic(key).messages.create({ model: "chat-model", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }).catch((x: unknown) => x);
    expect(a).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(JSON.stringify((a as InstanceType<typeof Anthropic.APIError>).error)).toMatch(/permission_error.*sim-no-price/);
    expect(h.sim.requests.length).toBe(before);
  });

  it("a run-start rate limit is a 429; a body over the payload limit a 413; a provider down after every retry a 503", async () => {
    expect((await admin("POST", "/v1/tenants", { tenantId: "slow", name: "Slow", limits: { rate: { runStartsPerMinute: 1 } } })).status).toBe(201);
    const key = (await admin("POST", "/v1/tenants/slow/keys", { name: "k" })).body["secret"] as string;
    expect((await admin("PUT", "/v1/tenants/slow/credentials/sim", { credential: { kind: "api_key", apiKey: SIM_KEY } })).status).toBe(200);
    expect((await admin("PUT", "/v1/tenants/slow/routes/chat-model", { targets: [{ provider: "openai-chat", model: "sim-chat", baseUrl: `${h.sim.url}/v1`, credentialsRef: "sim" }] })).status).toBe(200);
    h.sim.enqueue({ text: "first" });
    await withinOneMinuteWindow();
    await openai(key).chat.completions.create({ model: "chat-model", messages: [{ role: "user", content: "hi" }] });
    const limited = await openai(key).chat.completions.create({ model: "chat-model", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited).toMatchObject({ code: "rate_limit_exceeded" });
    expect((await h.gw.store.ledger.dailyRefusals("slow")).map((r) => [r.rateLimited, r.budgetExhausted])).toEqual([[1, 0]]);

    const big = await fetch(`${h.gw.url}/v1/messages`, {
      method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-model", max_tokens: 10, messages: [{ role: "user", content: "x".repeat(70_000) }] }),
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ type: "error", error: { type: "request_too_large" } });

    // 1 attempt + 4 connection retries, all 503: the caller gets a 503 and the ledger 5 rows.
    for (let i = 0; i < 5; i++) h.sim.enqueue({ httpError: { status: 503 } });
    const down = await anthropic().messages.create({ model: "claude-model", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(Anthropic.APIError);
    expect(down).toMatchObject({ status: 503, error: { type: "error", error: { type: "overloaded_error" } } });
  });

  it("GET /v1/models (the control plane's catalogue) lists the tenant's routed models to the OpenAI SDK", async () => {
    const ids: string[] = [];
    for await (const m of openai().models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining(["chat-model", "claude-model", "responses-model", "failover-model"]));
  });

  it("a route and a price changed through this process's admin API apply to the next call, though both are cached (GATEWAY_ROUTE_CACHE_MS)", async () => {
    const route = (model: string) => admin("PUT", "/v1/tenants/compat/routes/moving-model", { targets: [{ provider: "openai-chat", model, baseUrl: `${h.sim.url}/v1`, credentialsRef: "sim" }] });
    const call = async () => {
      h.sim.enqueue({ text: "ok", usage: { inputTokens: 1_000_000, outputTokens: 0 } });
      const r = await openai().chat.completions.create({ model: "moving-model", messages: [{ role: "user", content: "hi" }] });
      return { upstream: (h.sim.requests.at(-1)!.body as { model: string }).model, row: (await ledger(r.id))[0]! };
    };
    expect((await route("sim-moving-a")).status).toBe(200);
    expect((await admin("POST", "/v1/prices", { provider: "openai-chat", model: "sim-moving-b", inputPerMTok: 1_000_000, outputPerMTok: 0 })).status).toBe(201);
    // Both now cached (the route for this tenant, the price table for the process) ...
    expect(await call()).toMatchObject({ upstream: "sim-moving-a", row: { costMicroUsd: 0 } });
    expect((await route("sim-moving-b")).status).toBe(200);
    expect(await call()).toMatchObject({ upstream: "sim-moving-b", row: { priceVersion: 1, costMicroUsd: 1_000_000 } });
    // ... and a new price version through the same admin API prices the next row.
    expect((await admin("POST", "/v1/prices", { provider: "openai-chat", model: "sim-moving-b", inputPerMTok: 3_000_000, outputPerMTok: 0 })).status).toBe(201);
    expect(await call()).toMatchObject({ upstream: "sim-moving-b", row: { priceVersion: 2, costMicroUsd: 3_000_000 } });
  });
});
