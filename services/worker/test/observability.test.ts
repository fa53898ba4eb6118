// Observability across real processes (an ingress and a worker, Redis and Postgres): each
// process keeps its spans in memory and appends them to a trace file (GATEWAY_TRACE_FILE), and
// one turn with a client tool must form one unbroken trace across both; /metrics of both
// processes move by what the turn did; the worker's log lines inside the run carry the trace.
//
// The trace is looked up by its request id and awaited as a whole structure: the run span ends
// after the client saw turn_ended and the processes flush every 100 ms, so a check that stops
// at the first span of the right trace (as an earlier version of this test did) can race.
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GENAI, SPAN, type SpanLine } from "@byok/telemetry";
import {
  createCursorClient, createWorkspaceExecutor, makeWorkspace, metricDelta, runRequestMessage, scrapeMetrics, withinOneMinuteWindow, type WorkspaceExecutor,
} from "@byok/testing";
import { logRecords, startTestCluster, TEST_MODEL, waitFor, type TestCluster } from "./process-harness.js";

describe("observability across ingress and worker processes", () => {
  let c: TestCluster;
  let ws: WorkspaceExecutor;
  const traceFile = join(mkdtempSync(join(tmpdir(), "byok-trace-")), "spans.jsonl");
  const readSpans = (): SpanLine[] =>
    existsSync(traceFile) ? readFileSync(traceFile, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as SpanLine) : [];

  beforeAll(async () => {
    // One run at a time on the one worker, so a second turn must wait in the queue.
    c = await startTestCluster({
      ingress: 1,
      workers: 1,
      env: { GATEWAY_TRACE_FILE: traceFile, GATEWAY_WORKER_CONCURRENCY: "1" },
      tenants: [{ tenantId: "limited", retention: "full", limits: { rate: { runStartsPerMinute: 1 } } }],
    });
    ws = createWorkspaceExecutor(await makeWorkspace(await mkdtemp(join(tmpdir(), "obs-ws-")), { "notes.txt": "beta\n" }));
  }, 180_000); // two tsx processes start; on a loaded CI machine that takes a while
  afterAll(async () => {
    await c?.close();
  });

  it("one turn with a client tool: one unbroken trace from the ingress's BidiAppend to the worker's provider calls and tool, metrics of both processes, traced worker logs", async () => {
    const [ingress] = c.ingress;
    const [worker] = c.workers;
    const beforeIngress = await scrapeMetrics(ingress!.url);
    const beforeWorker = await scrapeMetrics(worker!.url);
    c.sim.enqueue(
      { toolCalls: [{ id: "functions.Read:0", name: "Read", arguments: JSON.stringify({ path: "notes.txt" }) }], usage: { inputTokens: 11, outputTokens: 4 } },
      { text: ["It ", "says ", "beta."], usage: { inputTokens: 21, outputTokens: 3 } },
    );
    const requestId = `obs-${randomUUID()}`;
    const client = createCursorClient({ baseUrl: ingress!.url, authToken: c.authToken });
    const r = await client.runTurn({
      requestId,
      message: runRequestMessage({ text: "read my notes", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }),
      onMessage: async (m, t) => {
        if (m.message.case !== "execServerMessage") return;
        for (const reply of await ws.execute(m.message.value)) await t.append(reply);
      },
    });
    expect(r.end).toEqual({ ok: true });

    // The whole trace, once every span of it reached the file.
    const { spans, run } = await waitFor(
      () => {
        const all = readSpans();
        const run = all.find((s) => s.name === SPAN.run && s.attributes["byok.request_id"] === requestId);
        if (!run) return undefined;
        const spans = all.filter((s) => s.traceId === run.traceId);
        const sse = all.find((s) => s.name === SPAN.runSse && s.attributes["byok.request_id"] === requestId);
        return sse && spans.filter((s) => s.kind === "CLIENT").length === 2 ? { spans, run } : undefined;
      },
      15_000,
      "the turn's trace in the trace file",
    );
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentOf = (s: SpanLine) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);

    // ingress: BidiAppend (root) → bus entry; worker: run, child of that entry, linked to the job's dispatch.
    expect(run).toMatchObject({ service: "worker", kind: "CONSUMER" });
    const entry = parentOf(run)!;
    expect(entry).toMatchObject({ service: "ingress", name: SPAN.busAppendInput, kind: "PRODUCER" });
    const append = parentOf(entry)!;
    expect(append).toMatchObject({ service: "ingress", name: SPAN.bidiAppend, kind: "SERVER" });
    expect(append.parentSpanId).toBeUndefined();
    const dispatch = spans.find((s) => s.name === SPAN.jobDispatch)!;
    expect(dispatch).toMatchObject({ service: "ingress", parentSpanId: append.spanId });
    expect(run.links).toEqual([{ traceId: run.traceId, spanId: dispatch.spanId }]);

    // worker: a CLIENT span per provider call and an execute_tool span, children of the run.
    const children = spans.filter((s) => s.parentSpanId === run.spanId);
    const calls = children.filter((s) => s.kind === "CLIENT");
    expect(calls.map((s) => [s.service, s.name, s.attributes[GENAI.inputTokens], s.attributes[GENAI.outputTokens]])).toEqual([
      ["worker", "chat sim-model", 11, 4],
      ["worker", "chat sim-model", 21, 3],
    ]);
    const tool = children.find((s) => s.name === "execute_tool Read")!;
    expect(tool).toMatchObject({ service: "worker", kind: "INTERNAL" });
    // The client's exec request carries the tool span's context, so the client's spans join.
    const execs = r.messages.flatMap((m) => (m.message.case === "execServerMessage" ? [m.message.value] : []));
    expect(execs.length).toBeGreaterThan(0);
    for (const e of execs) expect(e.spanContext).toMatchObject({ traceId: run.traceId, spanId: tool.spanId });
    // The RunSSE stream (its own trace) links to the run it read.
    const sse = readSpans().find((s) => s.name === SPAN.runSse && s.attributes["byok.request_id"] === requestId)!;
    expect(sse).toMatchObject({ service: "ingress", kind: "SERVER" });
    expect(sse.links).toEqual([{ traceId: run.traceId, spanId: run.spanId }]);

    // Worker metrics: the run, its provider calls, the queue.
    const w = metricDelta(beforeWorker, await scrapeMetrics(worker!.url));
    expect(w("byok_runs_started_total")).toBe(1);
    expect(w("byok_runs_ended_total", { code: "ok" })).toBe(1);
    expect(w("byok_runs_active")).toBe(0);
    expect(w("byok_queue_wait_seconds_count")).toBe(1);
    expect(w("gen_ai_client_operation_duration_seconds_count", { gen_ai_request_model: "sim-model" })).toBe(2);
    expect(w("gen_ai_client_token_usage_sum", { gen_ai_token_type: "input" })).toBe(32);
    expect(w("gen_ai_client_token_usage_sum", { gen_ai_token_type: "output" })).toBe(7);
    expect(w("byok_tokens_total", { kind: "input" })).toBe(32);
    expect(w("byok_gateway_overhead_seconds_count", { stage: "provider_to_bus" })).toBe(2);
    const workerText = await (await fetch(`${worker!.url}/metrics`)).text();
    expect(workerText).toMatch(/^byok_queue_depth\{state="waiting"\} 0$/m);
    // Ingress metrics: the appends, the stream, every frame delivered live.
    const i = metricDelta(beforeIngress, await scrapeMetrics(ingress!.url));
    // The KV answers travel together (a Cursor client does not wait for one before the next), so
    // one may reach the gate ahead of its predecessor and be buffered until the gap fills.
    expect(i("byok_bidi_appends_total", { outcome: "accepted" }) + i("byok_bidi_appends_total", { outcome: "buffered" })).toBe(r.appends.length);
    expect(i("byok_run_sse_streams_total", { end_code: "ok" })).toBe(1);
    expect(i("byok_run_sse_open")).toBe(0);
    const delivered = i("byok_frames_delivered_total");
    expect(delivered).toBeGreaterThanOrEqual(r.messages.length);
    expect(i("byok_gateway_overhead_seconds_count", { stage: "bus_to_client" })).toBe(r.messages.length);

    // The worker's log line at the run's end carries its trace, tenant and model.
    const ended = logRecords(worker!).find((l) => l.requestId === requestId && l.msg === "run ended");
    expect(ended).toMatchObject({ trace_id: run.traceId, span_id: run.spanId, tenant: "default", model: TEST_MODEL });
  });

  it("byok_queue_depth counts the run jobs waiting for a busy worker, and falls back to 0 when they ran", async () => {
    const [ingress] = c.ingress;
    const [worker] = c.workers;
    const depth = async (state: string) => {
      const text = await (await fetch(`${worker!.url}/metrics`)).text();
      return Number(new RegExp(`^byok_queue_depth\\{state="${state}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? Number.NaN);
    };
    c.sim.enqueue(
      { text: Array.from({ length: 20 }, (_, i) => `busy${i} `), chunkDelayMs: 100, usage: { inputTokens: 3, outputTokens: 20 } },
      { text: ["second"], usage: { inputTokens: 3, outputTokens: 1 } },
      { text: ["third"], usage: { inputTokens: 3, outputTokens: 1 } },
    );
    const client = createCursorClient({ baseUrl: ingress!.url, authToken: c.authToken });
    const turn = (tag: string) => {
      const requestId = `depth-${tag}-${randomUUID()}`;
      return client.runTurn({ requestId, message: runRequestMessage({ text: tag, conversationId: `conv-${requestId}`, modelId: TEST_MODEL }) });
    };
    const first = turn("first");
    await waitFor(async () => (await depth("active")) === 1, 20_000, "the first run active on the worker");
    const later = [turn("second"), turn("third")];
    // Both later jobs wait while the only slot is taken (read at scrape time from the queue).
    expect(await waitFor(async () => ((await depth("waiting")) === 2 ? 2 : undefined), 20_000, "two waiting jobs")).toBe(2);
    expect(await depth("active")).toBe(1);
    for (const r of await Promise.all([first, ...later])) expect(r.end).toEqual({ ok: true });
    await waitFor(async () => (await depth("waiting")) === 0 && (await depth("active")) === 0, 20_000, "an empty queue");
  });

  it("the worker counts a provider retry and a rate refusal of real turns; the ingress counts the refused stream", async () => {
    const [ingress] = c.ingress;
    const [worker] = c.workers;
    const beforeWorker = await scrapeMetrics(worker!.url);
    const beforeIngress = await scrapeMetrics(ingress!.url);
    c.sim.enqueue({ httpError: { status: 500 } }, { text: ["after ", "a retry"], usage: { inputTokens: 4, outputTokens: 2 } });
    const client = createCursorClient({ baseUrl: ingress!.url, authToken: c.tenantTokens.limited! });
    const turn = (tag: string) => {
      const requestId = `limited-${tag}-${randomUUID()}`;
      return client.runTurn({ requestId, message: runRequestMessage({ text: tag, conversationId: `conv-${requestId}`, modelId: TEST_MODEL }) });
    };
    // The tenant may start one run a minute: the second is refused before any provider call.
    await withinOneMinuteWindow();
    expect((await turn("first")).end).toEqual({ ok: true });
    const refused = await turn("second");
    expect(refused.end).toMatchObject({ ok: false, code: "resource_exhausted" });
    const w = metricDelta(beforeWorker, await scrapeMetrics(worker!.url));
    expect(w("byok_provider_retries_total", { provider: "openai-chat", reason: "server", action: "retry" })).toBe(1);
    expect(w("byok_refusals_total", { reason: "rate_limited" })).toBe(1);
    expect(w("byok_runs_ended_total", { code: "ok" })).toBe(1);
    expect(w("byok_runs_ended_total", { code: "resource_exhausted" })).toBe(1);
    expect(w("gen_ai_client_operation_duration_seconds_count", { error_type: "server" })).toBe(1);
    const i = metricDelta(beforeIngress, await scrapeMetrics(ingress!.url));
    expect(i("byok_run_sse_streams_total", { end_code: "ok" })).toBe(1);
    expect(i("byok_run_sse_streams_total", { end_code: "resource_exhausted" })).toBe(1);
  });
});
