// Observability of the OpenAI- and Anthropic-compatible endpoints (docs/observability.md,
// docs/compat.md) through the embedded gateway: each request is a `gateway.compat_request`
// SERVER span whose provider attempts are `chat {model}` CLIENT spans with the GenAI attributes
// (error.type on a failed attempt), the GenAI histograms, retries, failovers and refusals move by
// what the requests did (read from /metrics; the test increments nothing), and no request or
// answer text enters a span, although the tenant opted into prompt tracing for its runs; log
// lines of a request carry its trace, tenant and model.
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ATTR, createLogger, createMemoryTracing, GENAI, SPAN, type MemoryTracing } from "@byok/telemetry";
import { metricDelta, scrapeMetrics, waitFor, withinOneMinuteWindow } from "@byok/testing";
import { adminCall, startHarness, type Harness } from "./harness.js";

const ADMIN_KEY = "admin-key-for-compat-observability-0123";
const SIM_KEY = "sk-compat-obs-credential-0123456789";

describe("observability of the compatible endpoints (embedded gateway)", () => {
  let tracing: MemoryTracing;
  let h: Harness;
  const keys: Record<string, string> = {};
  const logLines: string[] = [];

  const admin = (method: string, path: string, body?: unknown) => adminCall(h.gw, ADMIN_KEY, method, path, body);
  const spans = () => tracing.exporter.getFinishedSpans();

  async function tenant(id: string, limits?: Record<string, unknown>): Promise<void> {
    expect((await admin("POST", "/v1/tenants", { tenantId: id, name: id, ...(limits ? { limits } : {}) })).status).toBe(201);
    keys[id] = (await admin("POST", `/v1/tenants/${id}/keys`, { name: `${id}-key` })).body["secret"] as string;
    expect((await admin("PUT", `/v1/tenants/${id}/credentials/sim`, { credential: { kind: "api_key", apiKey: SIM_KEY } })).status).toBe(200);
    const target = (provider: string, model: string, base = `${h.sim.url}/v1`) => ({ provider, model, baseUrl: base, credentialsRef: "sim" });
    const routes: Record<string, unknown[]> = {
      "chat-model": [target("openai-chat", "sim-chat")],
      "claude-model": [target("anthropic", "claude-obs", h.sim.url)],
      "failover-model": [target("openai-chat", "sim-primary"), target("anthropic", "claude-obs", h.sim.url)],
    };
    for (const [modelId, targets] of Object.entries(routes)) expect((await admin("PUT", `/v1/tenants/${id}/routes/${modelId}`, { targets })).status).toBe(200);
  }

  async function post(tenantId: string, path: string, body: Record<string, unknown>): Promise<{ status: number; text: string }> {
    const res = await fetch(`${h.gw.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys[tenantId]}`, "x-api-key": keys[tenantId]!, "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  }

  /** The request's SERVER span and its provider-call children, once the request span ended. */
  async function traceOf(conversationId: string): Promise<{ server: ReadableSpan; calls: ReadableSpan[] }> {
    return waitFor(
      () => {
        const call = spans().find((s) => s.kind === SpanKind.CLIENT && s.attributes[GENAI.conversationId] === conversationId);
        const server = call && spans().find((s) => s.spanContext().spanId === call.parentSpanContext?.spanId);
        if (!server) return undefined;
        const calls = spans().filter((s) => s.parentSpanContext?.spanId === server.spanContext().spanId);
        return { server, calls };
      },
      10_000,
      `the spans of ${conversationId}`,
    );
  }

  beforeAll(async () => {
    tracing = createMemoryTracing();
    const logger = createLogger({ service: "gateway", level: "info", destination: { write: (l: string) => void logLines.push(l) } });
    h = await startHarness(
      { GATEWAY_AUTH_MODE: "api_key", GATEWAY_ADMIN_KEY: ADMIN_KEY, GATEWAY_METRICS_TENANT_LABEL: "true", GATEWAY_TRACE_CONTENT_TENANTS: "open-compat" },
      logger,
    );
    await tenant("open-compat");
    await tenant("limited-compat", { rate: { runStartsPerMinute: 1 } });
  });
  afterAll(async () => {
    await h?.close();
    await tracing?.shutdown();
  });

  it("a streamed Chat Completions request retried once: a SERVER span with a CLIENT span per attempt, GenAI metrics and the retry counted, no text in any span", async () => {
    const before = await scrapeMetrics(h.gw.url);
    h.sim.enqueue({ httpError: { status: 500 } }, { text: ["private ", "streamed ", "answer"], usage: { inputTokens: 7, outputTokens: 3 } });
    const r = await post("open-compat", "/v1/chat/completions", {
      model: "chat-model",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "a private compat prompt" }],
    });
    expect(r.status).toBe(200);
    const id = /"id":"(chatcmpl-[^"]+)"/.exec(r.text)![1]!;
    const { server, calls } = await traceOf(id);

    expect(server).toMatchObject({ name: SPAN.compatRequest, kind: SpanKind.SERVER });
    expect(server.parentSpanContext).toBeUndefined();
    expect(server.attributes).toMatchObject({ [ATTR.httpRoute]: "/v1/chat/completions", [ATTR.tenantId]: "open-compat", [ATTR.httpResponseStatusCode]: 200 });
    expect(calls.map((s) => [s.name, s.kind, s.attributes["byok.attempt"]])).toEqual([
      ["chat sim-chat", SpanKind.CLIENT, 1],
      ["chat sim-chat", SpanKind.CLIENT, 2],
    ]);
    expect(calls[0]!.attributes).toMatchObject({ [ATTR.errorType]: "server", [GENAI.providerName]: "openai", [GENAI.requestModel]: "sim-chat" });
    expect(calls[0]!.status).toMatchObject({ code: SpanStatusCode.ERROR, message: "server" });
    expect(calls[1]!.attributes).toMatchObject({ [GENAI.inputTokens]: 7, [GENAI.outputTokens]: 3, [GENAI.responseFinishReasons]: ["stop"], "byok.provider": "openai-chat" });
    expect(calls[1]!.status.code).toBe(SpanStatusCode.OK);
    expect(JSON.stringify([server, ...calls].map((s) => s.attributes))).not.toMatch(/private/);

    const d = metricDelta(before, await scrapeMetrics(h.gw.url));
    const genai = { gen_ai_operation_name: "chat", gen_ai_provider_name: "openai", gen_ai_request_model: "sim-chat", tenant: "open-compat" };
    expect(d("gen_ai_client_operation_duration_seconds_count", genai)).toBe(2);
    expect(d("gen_ai_client_operation_duration_seconds_count", { ...genai, error_type: "server" })).toBe(1);
    expect(d("gen_ai_client_operation_time_to_first_chunk_seconds_count", genai)).toBe(1);
    expect(d("gen_ai_client_operation_time_per_output_chunk_seconds_count", genai)).toBeGreaterThanOrEqual(2);
    expect(d("gen_ai_client_token_usage_sum", { ...genai, gen_ai_token_type: "input" })).toBe(7);
    expect(d("gen_ai_client_token_usage_sum", { ...genai, gen_ai_token_type: "output" })).toBe(3);
    expect(d("byok_provider_retries_total", { provider: "openai-chat", reason: "server", action: "retry" })).toBe(1);
    // Not a run: the run counters stay where they were.
    expect(d("byok_runs_started_total")).toBe(0);

    // The failed attempt's log line names tenant and model, inside the request's trace.
    const lines = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.requestId === id);
    expect(lines.find((l) => l.msg === "compatible endpoint model call failed")).toMatchObject({
      tenant: "open-compat",
      model: "chat-model",
      upstreamModel: "sim-chat",
      kind: "server",
      trace_id: server.spanContext().traceId,
      span_id: server.spanContext().spanId,
    });
    expect(logLines.join("\n")).not.toMatch(/private/);
  });

  it("Anthropic Messages: cache tokens on the call's span; a refused credential fails over to the next target, counted as a failover", async () => {
    h.sim.enqueue({ text: "cached", usage: { inputTokens: 30, outputTokens: 2, cacheReadTokens: 8, cacheWriteTokens: 12 } });
    const cached = await post("open-compat", "/v1/messages", { model: "claude-model", max_tokens: 100, messages: [{ role: "user", content: "cache this" }] });
    expect(cached.status).toBe(200);
    const { server, calls } = await traceOf((JSON.parse(cached.text) as { id: string }).id);
    expect(server.attributes).toMatchObject({ [ATTR.httpRoute]: "/v1/messages", [ATTR.httpResponseStatusCode]: 200 });
    expect(calls).toHaveLength(1);
    expect(calls[0]!.attributes).toMatchObject({
      [GENAI.providerName]: "anthropic",
      [GENAI.inputTokens]: 50,
      [GENAI.cacheReadInputTokens]: 8,
      [GENAI.cacheCreationInputTokens]: 12,
      [GENAI.outputTokens]: 2,
    });

    const before = await scrapeMetrics(h.gw.url);
    h.sim.enqueue({ httpError: { status: 401 } }, { text: "from the second target", usage: { inputTokens: 4, outputTokens: 4 } });
    const failover = await post("open-compat", "/v1/chat/completions", { model: "failover-model", messages: [{ role: "user", content: "fail over" }] });
    expect(failover.status).toBe(200);
    const t = await traceOf((JSON.parse(failover.text) as { id: string }).id);
    expect(t.calls.map((s) => [s.name, s.attributes[ATTR.errorType]])).toEqual([
      ["chat sim-primary", "auth"],
      ["chat claude-obs", undefined],
    ]);
    const d = metricDelta(before, await scrapeMetrics(h.gw.url));
    expect(d("byok_provider_retries_total", { provider: "openai-chat", reason: "auth", action: "failover" })).toBe(1);
    expect(d("gen_ai_client_operation_duration_seconds_count", { gen_ai_provider_name: "anthropic", gen_ai_request_model: "claude-obs", tenant: "open-compat" })).toBe(1);
  });

  it("a rate-limited request is counted as a refusal; its SERVER span carries error.type and the 429, and no provider call", async () => {
    h.sim.enqueue({ text: "one" });
    const before = await scrapeMetrics(h.gw.url);
    await withinOneMinuteWindow();
    const ask = (i: number) => post("limited-compat", "/v1/chat/completions", { model: "chat-model", messages: [{ role: "user", content: `again ${i}` }] });
    expect((await ask(0)).status).toBe(200);
    expect((await ask(1)).status).toBe(429);
    const d = metricDelta(before, await scrapeMetrics(h.gw.url));
    expect(d("byok_refusals_total", { reason: "rate_limited", tenant: "limited-compat" })).toBe(1);
    const server = await waitFor(
      () => spans().find((s) => s.name === SPAN.compatRequest && s.attributes[ATTR.tenantId] === "limited-compat" && s.attributes[ATTR.httpResponseStatusCode] === 429),
      10_000,
      "the refused request's span",
    );
    expect(server.attributes[ATTR.errorType]).toBe("rate_limited");
    expect(server.status.code).toBe(SpanStatusCode.ERROR);
    expect(spans().filter((s) => s.parentSpanContext?.spanId === server.spanContext().spanId)).toEqual([]);
  });
});
