import { context as otelContext, SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import { create } from "@bufbuild/protobuf";
import { isEnded, type RunError, type RunState, type Transition, type ProviderKind, type ProviderTarget, type StopReason, type Usage } from "@byok/protocol";
import { ATTR, GENAI, GENAI_OPERATION, genAiSpanName, SPAN_EVENT, type FencedWrite, type GatewayMetrics, type RefusalReason } from "@byok/telemetry";
import { SpanContextSchema, type AgentServerMessage } from "@byok/wire";

const tracer = trace.getTracer("@byok/agent");

/** `gen_ai.provider.name` of each provider kind (OpenTelemetry GenAI well-known values). */
const PROVIDER_NAME: Record<ProviderKind, string> = {
  "openai-responses": "openai",
  // Any OpenAI-compatible endpoint; `byok.provider` tells it apart from OpenAI Responses.
  "openai-chat": "openai",
  anthropic: "anthropic",
  "azure-openai": "azure.ai.openai",
  "bedrock-anthropic": "aws.bedrock",
};

/** `gen_ai.response.finish_reasons` of the normalized stop reasons. */
const FINISH_REASON: Record<StopReason, string> = { end_turn: "stop", tool_use: "tool_call", max_tokens: "length", other: "other" };

const REFUSALS = new Set<string>(["budget_exhausted", "rate_limited"] satisfies RefusalReason[]);

/** An attempt's gateway TTFT overhead: provider's first chunk → its first frame appended to the bus, microseconds. */
export interface AttemptOverhead {
  us: number | undefined;
}

/** What a model call's prompt may show in its span (only when the tenant opted in and the run is not private). */
export interface PromptContent {
  instructions: string;
  items: unknown;
}

/**
 * One provider call's span (`chat {model}`, CLIENT, GenAI attributes) and GenAI metrics.
 * `chunk()` for every provider event, then exactly one of `completed` / `failed` / `cancelled`.
 */
export class ModelCallTelemetry {
  private readonly span: Span;
  private readonly startedAt = performance.now();
  private lastChunkAt: number | undefined;
  private usage: Usage | undefined;
  private output = "";
  private ended = false;

  constructor(
    private readonly metrics: GatewayMetrics | undefined,
    private labels: Record<string, string>,
    target: ProviderTarget,
    ids: { modelCallId: string; attempt: number; conversationId: string },
    private readonly content: PromptContent | undefined,
  ) {
    this.span = tracer.startSpan(genAiSpanName(GENAI_OPERATION.chat, target.model), {
      kind: SpanKind.CLIENT,
      attributes: {
        [GENAI.operationName]: GENAI_OPERATION.chat,
        [GENAI.providerName]: PROVIDER_NAME[target.kind],
        [GENAI.requestModel]: target.model,
        [GENAI.conversationId]: ids.conversationId,
        ...(target.maxOutputTokens ? { [GENAI.requestMaxTokens]: target.maxOutputTokens } : {}),
        [ATTR.provider]: target.kind,
        [ATTR.modelCallId]: ids.modelCallId,
        [ATTR.attempt]: ids.attempt,
      },
    });
    if (content) {
      this.span.setAttribute(GENAI.systemInstructions, JSON.stringify([{ type: "text", content: content.instructions }]));
      this.span.setAttribute(GENAI.inputMessages, JSON.stringify(content.items));
    }
  }

  /** A provider event arrived; returns whether it was the attempt's first. */
  chunk(text?: string): boolean {
    const now = performance.now();
    const first = this.lastChunkAt === undefined;
    if (first) this.metrics?.genAiTimeToFirstChunk.observe(this.labels, (now - this.startedAt) / 1000);
    else this.metrics?.genAiTimePerOutputChunk.observe(this.labels, (now - this.lastChunkAt!) / 1000);
    this.lastChunkAt = now;
    if (this.content && text) this.output += text;
    return first;
  }

  completed(usage: Usage, stopReason: StopReason | undefined, responseModel: string | undefined): void {
    this.usage = usage;
    if (responseModel) {
      this.span.setAttribute(GENAI.responseModel, responseModel);
      this.labels = { ...this.labels, gen_ai_response_model: this.metrics?.modelLabel(responseModel) ?? responseModel };
    }
    if (stopReason) this.span.setAttribute(GENAI.responseFinishReasons, [FINISH_REASON[stopReason]]);
    if (this.content) this.span.setAttribute(GENAI.outputMessages, JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: this.output }] }]));
    this.end(undefined);
  }

  failed(kind: string, partialUsage: Usage | undefined): void {
    this.usage = partialUsage;
    this.end(kind);
  }

  cancelled(): void {
    this.end("cancelled");
  }

  private end(errorType: string | undefined): void {
    if (this.ended) return;
    this.ended = true;
    const u = this.usage;
    // Only provider-reported usage enters the GenAI attributes and histogram (estimates do not).
    if (u && !u.estimated) {
      // The conventions count cache reads and writes inside the input tokens.
      const input = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens;
      this.span.setAttributes({
        [GENAI.inputTokens]: input,
        [GENAI.outputTokens]: u.outputTokens,
        [GENAI.cacheReadInputTokens]: u.cacheReadTokens,
        [GENAI.cacheCreationInputTokens]: u.cacheWriteTokens,
        [GENAI.reasoningOutputTokens]: u.reasoningTokens,
      });
      this.metrics?.genAiTokenUsage.observe({ ...this.labels, gen_ai_token_type: "input" }, input);
      this.metrics?.genAiTokenUsage.observe({ ...this.labels, gen_ai_token_type: "output" }, u.outputTokens);
    }
    this.metrics?.genAiOperationDuration.observe({ ...this.labels, ...(errorType ? { error_type: errorType } : {}) }, (performance.now() - this.startedAt) / 1000);
    if (errorType) {
      this.span.setAttribute(ATTR.errorType, errorType);
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
    } else this.span.setStatus({ code: SpanStatusCode.OK });
    this.span.end();
  }
}

/**
 * A run's telemetry: its metrics, its provider-call and tool spans, and the span context the
 * client's own spans join (`span_context` of every ExecServerMessage and KvServerMessage).
 * Every method is a no-op for what is not configured (no metrics, tracing off).
 */
export class RunTelemetry {
  /** Open `execute_tool` spans by tool call id. */
  private readonly tools = new Map<string, Span>();
  /** The current attempt's first chunk (when it arrived), until its first frame is appended. */
  private firstChunkOf: { at: number; overhead: AttemptOverhead } | undefined;

  constructor(
    private readonly metrics: GatewayMetrics | undefined,
    private readonly tenantId: string,
  ) {}

  private get tenant(): { tenant?: string } {
    return this.metrics?.tenantLabels(this.tenantId) ?? {};
  }

  /** The generation's `gateway.run` span: phase changes are recorded on it. */
  private runSpan: Span | undefined;

  started(takeover: boolean, runSpan: Span): void {
    this.runSpan = runSpan;
    this.metrics?.runsActive.inc();
    if (takeover) this.metrics?.takeovers.inc();
    else this.metrics?.runsStarted.inc(this.tenant);
  }

  /** The generation is no longer executing here (ended, lost or handed back). */
  stopped(): void {
    this.metrics?.runsActive.dec();
    for (const span of this.tools.values()) span.end();
    this.tools.clear();
  }

  ended(code: string): void {
    this.metrics?.runsEnded.inc({ code, ...this.tenant });
  }

  fenced(op: FencedWrite): void {
    this.metrics?.fencedWrites.inc({ op });
  }

  refused(error: RunError): void {
    if (REFUSALS.has(error.kind)) this.metrics?.refusals.inc({ reason: error.kind, ...this.tenant });
  }

  retried(provider: ProviderKind, reason: string, action: "retry" | "failover"): void {
    this.metrics?.providerRetries.inc({ provider, reason, action });
  }


  modelCall(target: ProviderTarget, ids: { modelCallId: string; attempt: number; conversationId: string }, content: PromptContent | undefined): ModelCallTelemetry {
    const labels = {
      gen_ai_operation_name: GENAI_OPERATION.chat,
      gen_ai_provider_name: PROVIDER_NAME[target.kind],
      gen_ai_request_model: this.metrics?.modelLabel(target.model) ?? target.model,
      ...this.tenant,
    };
    return new ModelCallTelemetry(this.metrics, labels, target, ids, content);
  }

  /**
   * The current attempt's first chunk arrived (gateway overhead starts). The returned record
   * gets the overhead once the next frames are appended (a later attempt's first chunk leaves
   * it unmeasured).
   */
  firstChunk(): AttemptOverhead {
    const overhead: AttemptOverhead = { us: undefined };
    this.firstChunkOf = { at: performance.now(), overhead };
    return overhead;
  }

  /** Frames were appended to the bus. */
  appended(): void {
    if (this.firstChunkOf === undefined) return;
    const seconds = (performance.now() - this.firstChunkOf.at) / 1000;
    this.metrics?.overhead.observe({ stage: "provider_to_bus" }, seconds);
    this.firstChunkOf.overhead.us = Math.round(seconds * 1e6);
    this.firstChunkOf = undefined;
  }

  /**
   * A frame about to be stored: ExecServerMessages start (or continue) their tool call's
   * `execute_tool` span and carry its context; KvServerMessages carry the run span's context.
   * Returns the frame to encode (a copy when it changed).
   */
  frame(f: AgentServerMessage, state: RunState): AgentServerMessage {
    const m = f.message;
    if (m.case === "execServerMessage") {
      const call = state.tools?.calls.find((c) => c.bridge?.kind === "exec" && c.bridge.id === m.value.id);
      const span = call ? this.toolSpan(call.callId, call.toolName) : trace.getActiveSpan();
      const sc = spanContextOf(span);
      return sc ? { ...f, message: { case: m.case, value: { ...m.value, spanContext: sc } } } : f;
    }
    if (m.case === "kvServerMessage") {
      const sc = spanContextOf(trace.getActiveSpan());
      return sc ? { ...f, message: { case: m.case, value: { ...m.value, spanContext: sc } } } : f;
    }
    return f;
  }

  /** A step changed the run's phase: an event on the run span. */
  transition(t: Transition): void {
    this.runSpan?.addEvent(SPAN_EVENT.runTransition, { [ATTR.phaseFrom]: t.from, [ATTR.phaseTo]: t.to, [ATTR.transitionCause]: t.cause });
  }

  /** After a step: tool calls that are done (or gone) end their spans. */
  stepped(state: RunState): void {
    for (const [callId, span] of this.tools) {
      const call = state.tools?.calls.find((c) => c.callId === callId);
      if (call && !call.done && !isEnded(state)) continue;
      span.setStatus({ code: SpanStatusCode.OK });
      span.end();
      this.tools.delete(callId);
    }
  }

  private toolSpan(callId: string, toolName: string): Span {
    let span = this.tools.get(callId);
    if (!span) {
      span = tracer.startSpan(genAiSpanName(GENAI_OPERATION.executeTool, toolName), {
        kind: SpanKind.INTERNAL,
        attributes: {
          [GENAI.operationName]: GENAI_OPERATION.executeTool,
          [GENAI.toolName]: toolName,
          [GENAI.toolCallId]: callId,
          // Executed by the Cursor client on the user's machine, on the model's request.
          [GENAI.toolType]: "function",
        },
      }, otelContext.active());
      this.tools.set(callId, span);
    }
    return span;
  }
}

function spanContextOf(span: Span | undefined) {
  const sc = span?.spanContext();
  if (!sc || !trace.isSpanContextValid(sc)) return undefined;
  return create(SpanContextSchema, {
    traceId: sc.traceId,
    spanId: sc.spanId,
    traceFlags: sc.traceFlags,
    ...(sc.traceState ? { traceState: sc.traceState.serialize() } : {}),
  });
}

/** The provider-call part of a run's telemetry, for provider calls made outside a run (the compatible endpoints). */
export type ProviderCallTelemetry = Pick<RunTelemetry, "modelCall" | "retried" | "refused">;

/** GenAI spans and metrics, retries and refusals of `tenantId`'s provider calls outside a run. */
export function providerCallTelemetry(metrics: GatewayMetrics | undefined, tenantId: string): ProviderCallTelemetry {
  return new RunTelemetry(metrics, tenantId);
}
