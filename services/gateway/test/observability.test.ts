// Observability of real turns through the embedded gateway (docs/observability.md): one trace
// from BidiAppend through the bus entry and the run to every provider call and client tool,
// span_context on exec and kv frames, GenAI attributes, prompts only for an opted-in tenant and
// never in ghost mode, every run metric moving by what the turns did (read from /metrics; the
// test increments nothing), and log lines inside a run carrying trace ids, tenant and model.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ATTR, createLogger, createMemoryTracing, GENAI, SPAN, type MemoryTracing } from "@byok/telemetry";
import {
  createCursorClient, createWorkspaceExecutor, exchangeApiKey, makeWorkspace, metricDelta, runOverHttp2, runRequestMessage, scrapeMetrics, waitFor, withinOneMinuteWindow,
  type CursorClient, type WorkspaceExecutor,
} from "@byok/testing";
import type { AgentClientMessage, AgentServerMessage } from "@byok/wire";
import { startHarness, type Harness } from "./harness.js";

const ADMIN_KEY = "admin-key-for-observability-0123456789";
const SIM_KEY = "sk-observability-credential-0123456789";

describe("observability through the embedded gateway", () => {
  let tracing: MemoryTracing;
  let h: Harness;
  let ws: WorkspaceExecutor;
  const logLines: string[] = [];
  let n = 0;
  const rid = (p: string) => `${p}-${++n}`;

  async function admin(method: string, path: string, body?: unknown): Promise<number> {
    const res = await fetch(`${h.gw.adminUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  /** A tenant with a key and a route to the simulator; `ghostMode` sets the client's x-ghost-mode. */
  async function tenant(id: string, limits?: Record<string, unknown>, policy?: Record<string, unknown>): Promise<{ client: (ghostMode?: boolean | "absent") => CursorClient; secret: string }> {
    expect(await admin("POST", "/v1/tenants", { tenantId: id, name: id, ...(limits ? { limits } : {}) })).toBe(201);
    if (policy) expect(await admin("PATCH", `/v1/tenants/${id}`, { policy })).toBe(200);
    const res = await fetch(`${h.gw.adminUrl}/v1/tenants/${id}/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ name: `${id}-key` }),
    });
    const key = (await res.json()) as { secret: string };
    expect(await admin("PUT", `/v1/tenants/${id}/credentials/sim`, { credential: { kind: "api_key", apiKey: SIM_KEY } })).toBe(200);
    expect(await admin("PUT", `/v1/tenants/${id}/routes/obs-model`, { targets: [{ provider: "openai-chat", model: "sim-obs", baseUrl: `${h.sim.url}/v1`, credentialsRef: "sim" }] })).toBe(200);
    return { client: (ghostMode = false) => createCursorClient({ baseUrl: h.gw.url, authToken: key.secret, ghostMode }), secret: key.secret };
  }

  const answerExecs = async (m: AgentServerMessage, t: { append(msg: AgentClientMessage): Promise<unknown> }) => {
    if (m.message.case !== "execServerMessage") return;
    for (const reply of await ws.execute(m.message.value)) await t.append(reply);
  };

  const spans = () => tracing.exporter.getFinishedSpans();
  const runSpanOf = (requestId: string) => waitFor(() => spans().find((s) => s.name === SPAN.run && s.attributes["byok.request_id"] === requestId), 10_000, `run span of ${requestId}`);
  const childrenOf = (parent: ReadableSpan) => spans().filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);

  beforeAll(async () => {
    tracing = createMemoryTracing();
    const logger = createLogger({ service: "gateway", level: "debug", destination: { write: (l: string) => void logLines.push(l) } });
    h = await startHarness(
      { GATEWAY_AUTH_MODE: "api_key", GATEWAY_ADMIN_KEY: ADMIN_KEY, GATEWAY_TRACE_CONTENT_TENANTS: "open-book,sealed-book", GATEWAY_METRICS_TENANT_LABEL: "true" },
      logger,
    );
    ws = createWorkspaceExecutor(await makeWorkspace(await mkdtemp(join(tmpdir(), "obs-ws-")), { "a.txt": "alpha\n" }));
  });
  afterAll(async () => {
    await h?.close();
    await tracing?.shutdown();
  });

  it("one trace per turn: BidiAppend → bus entry → run (linked to its job) → a CLIENT span per provider call and an execute_tool span per client tool; exec and kv frames carry span_context", async () => {
    const acme = await tenant("acme");
    h.sim.enqueue(
      { text: "Reading.", toolCalls: [{ id: "functions.Read:0", name: "Read", arguments: JSON.stringify({ path: "a.txt" }) }], usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 4 } },
      { text: "It says alpha.", usage: { inputTokens: 20, outputTokens: 6, reasoningTokens: 2 } },
    );
    const requestId = rid("trace");
    const r = await acme.client().runTurn({
      requestId,
      message: runRequestMessage({ text: "secret plans for the read", conversationId: `c-${requestId}`, modelId: "obs-model" }),
      onMessage: answerExecs,
    });
    expect(r.end).toEqual({ ok: true });

    const run = await runSpanOf(requestId);
    const traceId = run.spanContext().traceId;
    const inTrace = spans().filter((s) => s.spanContext().traceId === traceId);
    // The run's parent is the bus entry of the run_request, whose parent is its BidiAppend.
    const entry = inTrace.find((s) => s.spanContext().spanId === run.parentSpanContext?.spanId)!;
    expect(entry).toMatchObject({ name: SPAN.busAppendInput, kind: SpanKind.PRODUCER });
    const append = inTrace.find((s) => s.spanContext().spanId === entry.parentSpanContext?.spanId)!;
    expect(append).toMatchObject({ name: SPAN.bidiAppend, kind: SpanKind.SERVER });
    expect(append.parentSpanContext).toBeUndefined();
    expect(append.attributes["byok.request_id"]).toBe(requestId);
    expect(run.kind).toBe(SpanKind.CONSUMER);
    // Linked to the job's dispatch, a sibling of the bus entry.
    const dispatch = inTrace.find((s) => s.name === SPAN.jobDispatch)!;
    expect(dispatch.parentSpanContext?.spanId).toBe(append.spanContext().spanId);
    expect(run.links.map((l) => l.context.spanId)).toEqual([dispatch.spanContext().spanId]);

    // One CLIENT span per provider call, with the GenAI attributes.
    const calls = childrenOf(run).filter((s) => s.kind === SpanKind.CLIENT);
    expect(calls.map((s) => s.name)).toEqual(["chat sim-obs", "chat sim-obs"]);
    expect(calls[0]!.attributes).toMatchObject({
      [GENAI.operationName]: "chat",
      [GENAI.providerName]: "openai",
      [GENAI.requestModel]: "sim-obs",
      [GENAI.responseModel]: "sim-obs",
      // The conventions count cache reads inside the input tokens.
      [GENAI.inputTokens]: 14,
      [GENAI.outputTokens]: 5,
      [GENAI.cacheReadInputTokens]: 4,
      [GENAI.responseFinishReasons]: ["tool_call"],
    });
    expect(calls[1]!.attributes).toMatchObject({ [GENAI.inputTokens]: 20, [GENAI.outputTokens]: 6, [GENAI.reasoningOutputTokens]: 2, [GENAI.responseFinishReasons]: ["stop"] });

    // The client tool: one execute_tool span, whose context the ExecServerMessage carries.
    const tool = childrenOf(run).find((s) => s.name === "execute_tool Read")!;
    const started = r.messages.flatMap((m) => (m.message.case === "interactionUpdate" && m.message.value.message.case === "toolCallStarted" ? [m.message.value.message.value.callId] : []));
    expect(tool.attributes).toMatchObject({ [GENAI.operationName]: "execute_tool", [GENAI.toolName]: "Read", [GENAI.toolCallId]: started[0], [GENAI.toolType]: "function" });
    expect(tool.kind).toBe(SpanKind.INTERNAL);
    const execs = r.messages.flatMap((m) => (m.message.case === "execServerMessage" ? [m.message.value] : []));
    expect(execs.length).toBeGreaterThan(0);
    for (const e of execs) expect(e.spanContext).toMatchObject({ traceId, spanId: tool.spanContext().spanId, traceFlags: 1 });
    // KV (checkpoint blobs) carry the run span's context.
    const kvs = r.messages.flatMap((m) => (m.message.case === "kvServerMessage" ? [m.message.value] : []));
    expect(kvs.length).toBeGreaterThan(0);
    for (const k of kvs) expect(k.spanContext).toMatchObject({ traceId, spanId: run.spanContext().spanId });

    // The tenant did not opt in: no prompt or completion in any span.
    expect(JSON.stringify(inTrace.map((s) => s.attributes))).not.toMatch(/secret plans|It says alpha/);
  });

  it("a turn over HTTP/2 AgentService/Run is one trace too: its Run message → bus entry → run → provider call", async () => {
    const t = await tenant("h2");
    const token = (await exchangeApiKey(h.gw.url, t.secret)).accessToken;
    h.sim.enqueue({ text: "over h2", usage: { inputTokens: 2, outputTokens: 2 } });
    const requestId = rid("h2");
    const r = await runOverHttp2({ baseUrl: h.gw.url, token, requestId, message: runRequestMessage({ text: "hi", conversationId: `c-${requestId}`, modelId: "obs-model" }) });
    expect(r.error).toBeUndefined();
    const run = await runSpanOf(requestId);
    const inTrace = spans().filter((s) => s.spanContext().traceId === run.spanContext().traceId);
    const entry = inTrace.find((s) => s.spanContext().spanId === run.parentSpanContext?.spanId)!;
    expect(entry.name).toBe(SPAN.busAppendInput);
    const root = inTrace.find((s) => s.spanContext().spanId === entry.parentSpanContext?.spanId)!;
    expect(root).toMatchObject({ name: SPAN.agentRunAppend, kind: SpanKind.SERVER });
    expect(root.parentSpanContext).toBeUndefined();
    expect(childrenOf(run).filter((s) => s.kind === SpanKind.CLIENT)).toHaveLength(1);
  });

  it("prompts and completions enter provider-call spans only for an opted-in tenant, never in ghost mode", async () => {
    const open = await tenant("open-book");
    h.sim.enqueue({ text: "an open answer", usage: { inputTokens: 3, outputTokens: 2 } }, { text: "a ghostly answer", usage: { inputTokens: 3, outputTokens: 2 } });
    const shown = rid("content");
    expect((await open.client().runTurn({ requestId: shown, message: runRequestMessage({ text: "an open question", conversationId: `c-${shown}`, modelId: "obs-model" }) })).end).toEqual({ ok: true });
    const ghost = rid("ghost");
    expect((await open.client(true).runTurn({ requestId: ghost, message: runRequestMessage({ text: "a ghostly question", conversationId: `c-${ghost}`, modelId: "obs-model" }) })).end).toEqual({ ok: true });

    const shownCall = childrenOf(await runSpanOf(shown)).find((s) => s.kind === SpanKind.CLIENT)!;
    expect(String(shownCall.attributes[GENAI.inputMessages])).toContain("an open question");
    expect(String(shownCall.attributes[GENAI.outputMessages])).toContain("an open answer");
    const ghostRun = await runSpanOf(ghost);
    const ghostSpans = spans().filter((s) => s.spanContext().traceId === ghostRun.spanContext().traceId);
    expect(ghostSpans.some((s) => s.kind === SpanKind.CLIENT)).toBe(true);
    expect(JSON.stringify(ghostSpans.map((s) => s.attributes))).not.toMatch(/ghostly/);
  });

  it("a tenant enforcing privacy mode gets ghost-mode runs with x-ghost-mode absent or false: the bus entry says so, no prompt in spans though it opted into tracing, no content stored", async () => {
    const sealed = await tenant("sealed-book", undefined, { privacyMode: "enforced" });
    for (const header of ["absent", false] as const) {
      h.sim.enqueue({ text: `a sealed answer ${header}`, usage: { inputTokens: 3, outputTokens: 2 } });
      const requestId = rid(`sealed-${header}`);
      const conversationId = `c-${requestId}`;
      const r = await sealed.client(header).runTurn({ requestId, message: runRequestMessage({ text: `a sealed question ${header}`, conversationId, modelId: "obs-model" }) });
      expect(r.end, String(header)).toEqual({ ok: true });
      // The edge resolved the effective flag once: every consumer of the entry reads ghost mode.
      const ref = { tenantId: "sealed-book", requestId };
      const [first] = await h.gw.bus.readInput(ref, (await h.gw.bus.latestGeneration(ref))!.generation, 0);
      expect(first?.meta.principal?.ghostMode, String(header)).toBe(true);
      const run = await runSpanOf(requestId);
      const inTrace = spans().filter((s) => s.spanContext().traceId === run.spanContext().traceId);
      expect(inTrace.some((s) => s.kind === SpanKind.CLIENT)).toBe(true);
      expect(JSON.stringify(inTrace.map((s) => s.attributes))).not.toMatch(/sealed (question|answer)/);
      expect(await h.gw.store.listHistory("sealed-book", conversationId)).toHaveLength(0);
      expect(await h.gw.store.getConversation("sealed-book", conversationId)).toBeUndefined();
      expect(await h.gw.store.latestCheckpoint("sealed-book", conversationId)).toBeUndefined();
      for (const id of r.blobs.keys()) expect(await h.gw.store.getBlobs("sealed-book", [Buffer.from(id, "hex")]).then(([b]) => b)).toBeUndefined();
    }
  });

  it("every run metric moves by what a turn with one provider retry did", async () => {
    const t = await tenant("metered");
    // A priced model on gateway credentials: the ledger charges it, and the cost counter follows.
    await h.gw.store.prices.set({ provider: "openai-chat", model: "sim-obs", inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheReadPerMTok: 0, cacheWritePerMTok: 0 });
    const before = await scrapeMetrics(h.gw.url);
    h.sim.enqueue({ httpError: { status: 500 } }, { text: ["retried ", "and ", "answered"], usage: { inputTokens: 7, outputTokens: 3 } });
    const requestId = rid("metrics");
    const r = await t.client().runTurn({ requestId, message: runRequestMessage({ text: "count me", conversationId: `c-${requestId}`, modelId: "obs-model" }) });
    expect(r.end).toEqual({ ok: true });
    await runSpanOf(requestId); // the run has stopped executing
    const after = await scrapeMetrics(h.gw.url);
    const d = metricDelta(before, after);
    const genai = { gen_ai_provider_name: "openai", gen_ai_request_model: "sim-obs", tenant: "metered" };

    expect(d("byok_runs_started_total", { tenant: "metered" })).toBe(1);
    expect(d("byok_runs_ended_total", { code: "ok", tenant: "metered" })).toBe(1);
    expect(d("byok_runs_active")).toBe(0);
    expect(d("byok_takeovers_total")).toBe(0);
    expect(d("byok_provider_retries_total", { provider: "openai-chat", reason: "server", action: "retry" })).toBe(1);
    // Two provider calls: the failed one (error_type) and the answered one.
    expect(d("gen_ai_client_operation_duration_seconds_count", { ...genai, error_type: "server" })).toBe(1);
    expect(d("gen_ai_client_operation_duration_seconds_count", genai)).toBe(2);
    expect(d("gen_ai_client_operation_time_to_first_chunk_seconds_count", genai)).toBe(1);
    expect(d("gen_ai_client_operation_time_per_output_chunk_seconds_count", genai)).toBeGreaterThanOrEqual(2);
    expect(d("gen_ai_client_token_usage_sum", { ...genai, gen_ai_token_type: "input" })).toBe(7);
    expect(d("gen_ai_client_token_usage_sum", { ...genai, gen_ai_token_type: "output" })).toBe(3);
    expect(d("gen_ai_client_token_usage_count", genai)).toBe(2);
    // Tokens in the ledger's view: exactly what the ledger recorded (the failed attempt is an estimate).
    const ledger = await h.gw.store.ledger.forRequest("metered", requestId);
    const sum = (k: "inputTokens" | "outputTokens") => ledger.reduce((a, row) => a + row[k], 0);
    expect(d("byok_tokens_total", { provider: "openai-chat", kind: "input", tenant: "metered" })).toBe(sum("inputTokens"));
    expect(d("byok_tokens_total", { provider: "openai-chat", kind: "output", tenant: "metered" })).toBe(sum("outputTokens"));
    const cost = ledger.reduce((a, row) => a + row.costMicroUsd, 0);
    expect(cost).toBeGreaterThan(0);
    expect(d("byok_cost_usd_total", { provider: "openai-chat", gen_ai_request_model: "sim-obs", tenant: "metered" })).toBeCloseTo(cost / 1e6, 9);
    // Overhead: the answered attempt's first chunk to its first frame appended; every frame the
    // client read live (no heartbeat in this turn) from its append to the write.
    expect(d("byok_gateway_overhead_seconds_count", { stage: "provider_to_bus" })).toBe(1);
    // The same measurement is on the answered attempt's ledger row (microseconds); the attempt
    // refused with a 500 before any event has none.
    expect(ledger.map((row) => [row.outcome, row.ttftOverheadUs === undefined])).toEqual([["retried", true], ["ok", false]]);
    expect(ledger[1]!.ttftOverheadUs! / 1e6).toBeCloseTo(d("byok_gateway_overhead_seconds_sum", { stage: "provider_to_bus" }), 5);
    const delivered = d("byok_frames_delivered_total");
    expect(delivered).toBe(r.messages.length);
    expect(d("byok_gateway_overhead_seconds_count", { stage: "bus_to_client" })).toBe(delivered);
    // The KV answers travel together (a Cursor client does not wait for one before the next), so
    // one may reach the gate ahead of its predecessor and be buffered until the gap fills.
    expect(d("byok_bidi_appends_total", { outcome: "accepted" }) + d("byok_bidi_appends_total", { outcome: "buffered" })).toBe(r.appends.length);
    expect(d("byok_run_sse_streams_total", { end_code: "ok" })).toBe(1);
    expect(d("byok_run_sse_open")).toBe(0);
    // Bounded labels: no request id anywhere in the exposition.
    expect(JSON.stringify(after)).not.toContain(requestId);
  });

  it("provider-call spans: cache writes and reads on an Anthropic call; error.type and ERROR status on a retried and on a failed call", async () => {
    const t = await tenant("claude-shop");
    expect(await admin("PUT", "/v1/tenants/claude-shop/routes/claude-obs", { targets: [{ provider: "anthropic", model: "claude-obs", baseUrl: h.sim.url, credentialsRef: "sim", maxOutputTokens: 321 }] })).toBe(200);
    const callsOf = async (requestId: string) => childrenOf(await runSpanOf(requestId)).filter((s) => s.kind === SpanKind.CLIENT);

    // Anthropic reports cache writes and reads beside the uncached input: all three reach the span.
    h.sim.enqueue({ text: "cached answer", usage: { inputTokens: 30, outputTokens: 4, cacheReadTokens: 8, cacheWriteTokens: 12 } });
    const cached = rid("cache");
    expect((await t.client().runTurn({ requestId: cached, message: runRequestMessage({ text: "cache me", conversationId: `c-${cached}`, modelId: "claude-obs" }) })).end).toEqual({ ok: true });
    const [call] = await callsOf(cached);
    expect(call!.name).toBe("chat claude-obs");
    expect(call!.attributes).toMatchObject({
      [GENAI.providerName]: "anthropic",
      [GENAI.requestModel]: "claude-obs",
      [GENAI.requestMaxTokens]: 321,
      [GENAI.conversationId]: `c-${cached}`,
      [GENAI.inputTokens]: 50,
      [GENAI.outputTokens]: 4,
      [GENAI.cacheReadInputTokens]: 8,
      [GENAI.cacheCreationInputTokens]: 12,
      [GENAI.responseFinishReasons]: ["stop"],
      "byok.provider": "anthropic",
      "byok.attempt": 1,
    });
    expect(call!.status.code).toBe(SpanStatusCode.OK);
    expect(call!.attributes[ATTR.errorType]).toBeUndefined();

    // A server error retried: the failed attempt's span says why, the retry's span succeeded.
    h.sim.enqueue({ httpError: { status: 529 } }, { text: "after the retry", usage: { inputTokens: 3, outputTokens: 3 } });
    const retried = rid("retried");
    expect((await t.client().runTurn({ requestId: retried, message: runRequestMessage({ text: "retry me", conversationId: `c-${retried}`, modelId: "claude-obs" }) })).end).toEqual({ ok: true });
    const [failedAttempt, answered] = await callsOf(retried);
    expect(failedAttempt!.attributes).toMatchObject({ [ATTR.errorType]: "overloaded", "byok.attempt": 1 });
    expect(failedAttempt!.status).toMatchObject({ code: SpanStatusCode.ERROR, message: "overloaded" });
    expect(failedAttempt!.attributes[GENAI.responseModel]).toBeUndefined();
    expect(answered!.attributes).toMatchObject({ "byok.attempt": 2, [GENAI.outputTokens]: 3 });
    expect(answered!.status.code).toBe(SpanStatusCode.OK);

    // A refused credential is not retried: the run fails, and its one call's span carries error.type.
    const before = await scrapeMetrics(h.gw.url);
    h.sim.enqueue({ httpError: { status: 401 } });
    const failed = rid("failed");
    const r = await t.client().runTurn({ requestId: failed, message: runRequestMessage({ text: "fail me", conversationId: `c-${failed}`, modelId: "claude-obs" }) });
    expect(r.end).toMatchObject({ ok: false });
    const calls = await callsOf(failed);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.attributes).toMatchObject({ [ATTR.errorType]: "auth", [GENAI.providerName]: "anthropic", [GENAI.requestModel]: "claude-obs" });
    expect(calls[0]!.status).toMatchObject({ code: SpanStatusCode.ERROR, message: "auth" });
    // No usage was reported: no token attributes, not even zeros.
    expect(calls[0]!.attributes[GENAI.inputTokens]).toBeUndefined();
    const d = metricDelta(before, await scrapeMetrics(h.gw.url));
    const labels = { gen_ai_provider_name: "anthropic", gen_ai_request_model: "claude-obs", tenant: "claude-shop" };
    expect(d("gen_ai_client_operation_duration_seconds_count", { ...labels, error_type: "auth" })).toBe(1);
    expect(d("gen_ai_client_token_usage_count", labels)).toBe(0);
    expect(d("byok_runs_ended_total", { tenant: "claude-shop", code: "ok" })).toBe(0);
    expect(d("byok_runs_ended_total", { tenant: "claude-shop" })).toBe(1);
  });

  it("a RunSSE stream for a request that never appears ends not_found, counted under the code's name", async () => {
    const t = await tenant("lonely");
    const before = await scrapeMetrics(h.gw.url);
    const r = await t.client().collect(rid("never"));
    expect(r.end).toMatchObject({ ok: false, code: "not_found" });
    const d = metricDelta(before, await scrapeMetrics(h.gw.url));
    expect(d("byok_run_sse_streams_total", { end_code: "not_found" })).toBe(1);
    expect(d("byok_run_sse_streams_total")).toBe(1);
    expect(d("byok_run_sse_open")).toBe(0);
  });

  it("budget and rate refusals are counted by reason", async () => {
    const broke = await tenant("broke", { tenant: { monthlyTokens: 1 } });
    const busy = await tenant("busy", { rate: { runStartsPerMinute: 1 } });
    h.sim.enqueue({ text: "busy 1", usage: { inputTokens: 1, outputTokens: 1 } });
    const before = await scrapeMetrics(h.gw.url);
    const b = await broke.client().runTurn({ requestId: rid("broke"), message: runRequestMessage({ text: "too big", conversationId: "c-broke", modelId: "obs-model" }) });
    expect(b.end).toMatchObject({ ok: false, code: "resource_exhausted" });
    await withinOneMinuteWindow();
    const busyTurn = (i: number) => busy.client().runTurn({ requestId: rid("busy"), message: runRequestMessage({ text: "again", conversationId: `c-busy-${i}`, modelId: "obs-model" }) });
    expect((await busyTurn(0)).end).toEqual({ ok: true });
    expect((await busyTurn(1)).end).toMatchObject({ ok: false, code: "resource_exhausted" });
    const d = metricDelta(before, await scrapeMetrics(h.gw.url));
    expect(d("byok_refusals_total", { reason: "budget_exhausted", tenant: "broke" })).toBe(1);
    expect(d("byok_refusals_total", { reason: "rate_limited", tenant: "busy" })).toBe(1);
    expect(d("byok_runs_ended_total", { code: "resource_exhausted" })).toBe(2);
    // Each refusal is also a refusal row (no ledger row: no provider attempt), for the dashboard.
    const reasons = async (t: string) => (await h.gw.store.ledger.dailyRefusals(t)).map((r) => [r.rateLimited, r.budgetExhausted, r.unknownModel]);
    expect(await reasons("broke")).toEqual([[0, 1, 0]]);
    expect(await reasons("busy")).toEqual([[1, 0, 0]]);
    const lost = await tenant("lost");
    const u = await lost.client().runTurn({ requestId: rid("lost"), message: runRequestMessage({ text: "hi", conversationId: "c-lost", modelId: "no-such-model" }) });
    expect(u.end).toMatchObject({ ok: false });
    expect(await reasons("lost")).toEqual([[0, 0, 1]]);
  });

  it("log lines inside a run carry trace_id and span_id, tenant and model; the edge's append lines their span, tenant and request", async () => {
    const t = await tenant("logged");
    h.sim.enqueue({ text: "logged answer", usage: { inputTokens: 1, outputTokens: 1 } });
    const requestId = rid("logs");
    expect((await t.client().runTurn({ requestId, message: runRequestMessage({ text: "log me", conversationId: `c-${requestId}`, modelId: "obs-model" }) })).end).toEqual({ ok: true });
    const run = await runSpanOf(requestId);
    const lines = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.requestId === requestId);
    const ended = lines.find((l) => l.msg === "run ended");
    expect(ended).toMatchObject({ trace_id: run.spanContext().traceId, span_id: run.spanContext().spanId, tenant: "logged", model: "obs-model" });
    // The edge's line for the run_request's append, inside its BidiAppend span (the trace's root).
    const append = spans().find((s) => s.name === SPAN.bidiAppend && s.attributes["byok.request_id"] === requestId && s.spanContext().traceId === run.spanContext().traceId)!;
    expect(lines.find((l) => l.msg === "append" && l.seqno === "1")).toMatchObject({ tenant: "logged", trace_id: append.spanContext().traceId, span_id: append.spanContext().spanId, outcome: "accepted" });
  });
});
