/**
 * One model call of a compatible endpoint, run the way the agent engine runs a pass: the
 * tenant's route table gives the targets in failover order, every attempt is admitted and
 * settled by the run meter (rate limit per request, budget reservation per attempt, one ledger
 * row per attempt with exact usage and cost), the provider retry policy decides retries, and
 * failover or retry happens only while nothing has reached the caller. A target that speaks the
 * request's API gets the caller's own body (passthrough); any other the translated call.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { providerCallTelemetry, type AttemptInfo, type AttemptResult, type RunMeter, type TargetResolution } from "@byok/agent";
import { estimateInputTokens, estimateTokens, estimateUsage, OutputMeter } from "@byok/providers";
import { decideAfterFailure, runErrorFromProvider, ProviderError, type RetryPolicy, type ChatItem, type ProviderAdapter, type ProviderEvent, type ProviderKind, type ProviderTarget, type ReasoningEffort, type StopReason, type ToolSpec, type Usage } from "@byok/protocol";
import type { GatewayMetrics, Logger } from "@byok/telemetry";
import { CompatError, compatErrorFromRun } from "./errors.js";

/** The vendor API a compatible request speaks. */
export type VendorApi = "openai-chat" | "openai-responses" | "anthropic-messages";

/** The provider kinds that speak each vendor API: their targets get the caller's own body (passthrough). */
const SPOKEN_BY: Record<VendorApi, readonly ProviderKind[]> = {
  "openai-chat": ["openai-chat", "azure-openai"],
  "openai-responses": ["openai-responses"],
  "anthropic-messages": ["anthropic"],
};

/** True when a target of `kind` gets a request in `api` passed through rather than translated. */
export function speaks(kind: ProviderKind, api: VendorApi): boolean {
  return SPOKEN_BY[api].includes(kind);
}

/** A vendor request in the gateway's provider-neutral terms, for targets that speak another API. */
export interface NeutralCall {
  instructions: string;
  items: ChatItem[];
  tools: ToolSpec[];
  reasoningEffort: ReasoningEffort | undefined;
  /** Anthropic `thinking.budget_tokens`, passed to Anthropic targets as is. */
  thinkingBudgetTokens: number | undefined;
  /** Sampling fields every vendor API names the same (`temperature`, `top_p`), merged into the upstream body. */
  sampling: Record<string, number>;
}

/** What a vendor request asks for. */
export interface CompatCall {
  /** The model id the caller named: looked up in the tenant's routes. */
  modelId: string;
  api: VendorApi;
  /** The caller's body as it arrived: what a target that speaks `api` is sent (the route's fields rewritten). */
  body: Record<string, unknown>;
  stream: boolean;
  /** The caller's output cap; a lower cap of the route wins. */
  outputCap: number | undefined;
  /** The request translated, or why it cannot be (then only targets that speak `api` can serve it). */
  neutral: NeutralCall | CompatError;
}

/** What `translate` builds (a neutral call), or the client error that says why the request has no translation. */
export function translated<T>(translate: () => T): T | CompatError {
  try {
    return translate();
  } catch (err) {
    if (err instanceof CompatError) return err;
    throw err;
  }
}

/** Who is calling (from the gateway API key). */
export interface CompatPrincipal {
  tenantId: string;
  userId: string | undefined;
  keyId: string | undefined;
}

export interface CompatCallDeps {
  /** The tenant's route for a model id → targets in failover order (the agent engine's resolver). */
  resolveTargets(modelId: string, tenantId: string): Promise<TargetResolution>;
  adapterFor(kind: ProviderKind): ProviderAdapter;
  meter: RunMeter;
  retryPolicy: RetryPolicy;
  logger: Logger;
  /** The process's metrics: GenAI histograms, retries and refusals of these calls (docs/observability.md). */
  metrics?: GatewayMetrics;
}

/** Where the events of an attempt go: a vendor renderer (buffering, or streaming to the caller). */
export interface CallSink {
  /**
   * Starts an attempt, forgetting what an earlier one produced. `passthrough`: the target got
   * the caller's own body, and its events come back through `vendorEvent` rather than `event`.
   */
  begin(passthrough: boolean): void;
  event(ev: ProviderEvent): void;
  /** A vendor stream event (or the whole non-streaming response) of a passthrough attempt, every field kept. */
  vendorEvent(ev: Record<string, unknown>): void;
  /** True once anything reached the caller: from then on a failure ends the answer (no retry, no failover). */
  readonly committed: boolean;
  /** When the first byte was written to the caller (`performance.now()`); undefined before, and for a non-streaming answer. */
  readonly firstWriteAt: number | undefined;
}

export interface CallResult {
  usage: Usage;
  stopReason: StopReason | undefined;
  target: ProviderTarget;
}

/**
 * Runs `call` for `principal` under `requestId` (the id the caller sees: chatcmpl-…, resp_…,
 * msg_…; the ledger rows carry it as request and conversation id). Throws CompatError; when
 * `sink.committed` the caller's answer already started and the error must go in-stream.
 */
export async function runCall(
  deps: CompatCallDeps,
  principal: CompatPrincipal,
  requestId: string,
  call: CompatCall,
  sink: CallSink,
  signal: AbortSignal,
): Promise<CallResult> {
  const ref = { tenantId: principal.tenantId, requestId };
  // Each attempt is a `chat {model}` CLIENT span (child of the request's span) with the GenAI
  // metrics, as in a run; request and response content never enter these spans.
  const telemetry = providerCallTelemetry(deps.metrics, principal.tenantId);
  const log = deps.logger.child({ tenant: principal.tenantId, requestId, model: call.modelId });
  const meterPrincipal = { userId: principal.userId, keyId: principal.keyId, originalRequestId: undefined, ghostMode: false };
  const resolution = await deps.resolveTargets(call.modelId, principal.tenantId);
  if (!resolution.ok) {
    if (resolution.error.kind === "bad_model") await deps.meter.unknownModel(ref, meterPrincipal, call.modelId);
    throw compatErrorFromRun(resolution.error, call.modelId);
  }
  const admitted = await deps.meter.admitRun(ref, meterPrincipal, call.modelId);
  if (!admitted.ok) {
    telemetry.refused(admitted.error);
    throw compatErrorFromRun(admitted.error, call.modelId);
  }

  // A target that speaks another API needs the translation: without one, only same-API targets serve.
  const neutral = call.neutral instanceof CompatError ? undefined : call.neutral;
  const targets = resolution.targets.filter((t) => neutral !== undefined || speaks(t.kind, call.api));
  if (targets.length === 0) throw call.neutral as CompatError;
  const modelCallId = `${requestId}-m1`;
  let index = 0;
  let attempt = 0;
  let retries = { connect: 0, stream: 0 };
  for (;;) {
    const routed = targets[index]!;
    const passthrough = neutral === undefined || speaks(routed.kind, call.api);
    const target = passthrough ? routed : withCallOptions(routed, call.outputCap, neutral);
    const outputCap = passthrough ? minCap(call.outputCap, routed.maxOutputTokens) : target.maxOutputTokens;
    attempt++;
    sink.begin(passthrough);
    // Without a translation the vendor body is all there is to count.
    const inputTokens = neutral ? estimateInputTokens(neutral, target.model) : estimateTokens(JSON.stringify(call.body), target.model);
    const info: AttemptInfo = {
      ref,
      generation: 1,
      conversationId: requestId,
      modelCallId,
      attempt,
      principal: meterPrincipal,
      modelId: call.modelId,
      provider: target.kind,
      upstreamModel: target.model,
      credentialsSource: target.credentialsSource,
      estimatedInputTokens: inputTokens,
      maxOutputTokens: outputCap,
    };
    const admission = await deps.meter.admitAttempt(info);
    if (!admission.ok) {
      telemetry.refused(admission.error);
      throw compatErrorFromRun(admission.error, call.modelId);
    }

    const startedAt = Date.now();
    const output = new OutputMeter();
    let firstEventAt: number | undefined;
    /** The provider's first event (neutral or vendor), on the clock `sink.firstWriteAt` uses. */
    let firstEventMark: number | undefined;
    let usage: Usage | undefined;
    let stopReason: StopReason | undefined;
    let outcome: AttemptResult["outcome"] = "failed";
    let failure: ProviderError | undefined;
    const observed = telemetry.modelCall(target, { modelCallId, attempt, conversationId: requestId }, undefined);
    try {
      const stream = deps.adapterFor(target.kind).stream({
        target, instructions: neutral?.instructions ?? "", items: neutral?.items ?? [], tools: neutral?.tools ?? [],
        ...(!passthrough && neutral?.reasoningEffort ? { reasoningEffort: neutral.reasoningEffort } : {}),
        ...(passthrough
          ? {
              passthrough: {
                body: call.body,
                stream: call.stream,
                onVendorEvent: (ev: Record<string, unknown>) => {
                  firstEventMark ??= performance.now();
                  sink.vendorEvent(ev);
                },
              },
            }
          : {}),
        modelCallId, attempt, signal,
      });
      for await (const ev of stream) {
        firstEventAt ??= Date.now();
        firstEventMark ??= performance.now();
        observed.chunk();
        if (ev.type === "text_delta" || ev.type === "tool_call_delta") output.add(ev.type === "text_delta" ? ev.text : ev.argsDelta);
        if (ev.type === "reasoning_delta") output.add(ev.text, true);
        if (ev.type === "completed") {
          usage = ev.usage;
          stopReason = ev.stopReason;
          outcome = "ok";
          observed.completed(ev.usage, ev.stopReason, ev.responseModel);
        }
        if (!passthrough) sink.event(ev);
      }
    } catch (err) {
      failure = err instanceof ProviderError ? err : new ProviderError("network", "The model provider connection failed.", { cause: err });
      usage = failure.partialUsage;
      outcome = failure.kind === "cancelled" || signal.aborted ? "cancelled" : "failed";
      if (outcome === "failed") observed.failed(failure.kind, failure.partialUsage);
    } finally {
      observed.cancelled(); // no-op unless nothing above ended the call (the caller went away)
    }
    // What follows a failure, as for a run (decideAfterFailure): a retry of this target, the next
    // target, or the end — only while nothing reached the caller; there is no compaction here.
    const phase = firstEventAt === undefined ? "connect" : "stream";
    const goOn = outcome === "failed" && failure !== undefined && !sink.committed;
    const next = goOn
      ? decideAfterFailure(
          deps.retryPolicy,
          { error: failure!, phase, retriesSoFar: retries[phase], outputStarted: false, targetsLeft: targets.length - index - 1, mayCompact: false },
          Math.random,
        )
      : undefined;
    if (next?.action === "retry" || next?.action === "failover") outcome = "retried";
    await deps.meter
      .settleAttempt(info, admission.ticket, {
        outcome,
        usage: usage ?? estimateUsage(inputTokens, output, target.model),
        ttftMs: firstEventAt === undefined ? undefined : firstEventAt - startedAt,
        ttftOverheadUs: overheadUs(firstEventMark, sink.firstWriteAt),
        durationMs: Date.now() - startedAt,
      })
      .catch((err: unknown) => log.error({ err: err instanceof Error ? err.name : "unknown" }, "could not record a compatible endpoint attempt"));
    if (outcome === "ok") return { usage: usage!, stopReason, target };
    if (failure === undefined) throw new CompatError("upstream", "The model provider ended the answer without completing it.");
    if (outcome === "cancelled") throw new CompatError("internal", "The request was canceled.");
    log.warn({ provider: target.kind, upstreamModel: target.model, kind: failure.kind, status: failure.status, phase, next: next?.action ?? "fail" }, "compatible endpoint model call failed");
    if (next?.action === "retry" || next?.action === "failover") telemetry.retried(target.kind, failure.kind, next.action);
    if (next?.action === "retry") {
      retries[phase]++;
      await sleep(next.delayMs, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) throw new CompatError("internal", "The request was canceled.");
      continue;
    }
    if (next?.action === "failover") {
      index++;
      retries = { connect: 0, stream: 0 };
      continue;
    }
    throw compatErrorFromRun(runErrorFromProvider(failure, target.credentialsSource), call.modelId);
  }
}

/**
 * The gateway's share of the time to first token: the provider's first event to the first
 * byte written to the caller, microseconds. Only a streaming answer writes before the provider
 * finished; a non-streaming one (no first write during the attempt) has none.
 */
function overheadUs(firstEvent: number | undefined, firstWrite: number | undefined): number | undefined {
  if (firstEvent === undefined || firstWrite === undefined || firstWrite < firstEvent) return undefined;
  return Math.round((firstWrite - firstEvent) * 1000);
}

function minCap(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

/** The route's target with the caller's output cap, thinking budget and sampling fields applied (translated attempts). */
function withCallOptions(t: ProviderTarget, outputCap: number | undefined, call: NeutralCall): ProviderTarget {
  const out: ProviderTarget = { ...t };
  const cap = minCap(outputCap, t.maxOutputTokens);
  if (cap !== undefined) out.maxOutputTokens = cap;
  const options: Record<string, unknown> = { ...t.options };
  if (call.thinkingBudgetTokens !== undefined) options["thinkingBudgetTokens"] = call.thinkingBudgetTokens;
  if (Object.keys(call.sampling).length > 0) {
    const extra = typeof options["extraBody"] === "object" && options["extraBody"] !== null ? (options["extraBody"] as Record<string, unknown>) : {};
    options["extraBody"] = { ...call.sampling, ...extra };
  }
  if (Object.keys(options).length > 0) out.options = options;
  return out;
}

/** The sampling fields of a vendor request that every vendor API names the same. */
export function samplingOf(r: { temperature?: number | null | undefined; top_p?: number | null | undefined }): Record<string, number> {
  const out: Record<string, number> = {};
  if (typeof r.temperature === "number") out["temperature"] = r.temperature;
  if (typeof r.top_p === "number") out["top_p"] = r.top_p;
  return out;
}
