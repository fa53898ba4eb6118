import { estimateUsage } from "@byok/providers";
import {
  decideAfterFailure, DEFAULT_CONTEXT_WINDOW, mayCompactAfterRefusal, ProviderError, runErrorFromProvider,
  type ChatItem, type ProviderTarget, type RunStart, type ToolSpec, type Usage,
} from "@byok/protocol";
import { isStoreError, type AttemptOutcome } from "@byok/store";
import { overflowCut, passRequest } from "../pass-request.js";
import type { AttemptInfo } from "../metering.js";
import type { RunContext } from "./context.js";
import type { AttemptOverhead, PromptContent } from "./telemetry.js";
import { conversationHistory } from "./client-turns.js";

interface PassCall {
  modelCallId: string;
  attempt: number;
  instructions: string;
  items: ChatItem[];
  tools: ToolSpec[];
  /** Estimated input tokens of the pass. */
  inputTokens: number;
}

/**
 * The `start_model_call` effect: resolves targets on a model call's first attempt, builds the
 * pass from stored history, then streams the provider in the background; its events, retries
 * and failures come back to the actor as queued events.
 */
export async function startModelCall(ctx: RunContext, modelCallId: string, attempt: number): Promise<void> {
  const run = ctx.state.run;
  if (!run) return;
  if (attempt === 1) ctx.registerSecrets(run);
  // A new model call's history read also touches its conversation, in the same statement
  // (docs/benchmarks.md "The history read touches the conversation"); it is on the way to the
  // provider request beside the target resolution.
  const historyRead = conversationHistory(ctx, run, attempt === 1 ? { lastRequestId: ctx.ref.requestId } : undefined);
  historyRead.catch(() => undefined); // awaited below, or not needed when the call is refused first
  if (attempt === 1) {
    // A new model call: resolve its targets and reset its retry budget.
    const res = await ctx.deps.resolveTargets(run, ctx.ref.tenantId);
    if (!res.ok) {
      if (res.error.kind === "bad_model") await ctx.meter.unknownModel(ctx.ref, ctx.principal, run.modelId);
      ctx.push({ type: "run_refused", error: res.error });
      return;
    }
    ctx.targets = res.targets;
    ctx.targetIndex = 0;
    ctx.retries = { connect: 0, stream: 0 };
  }
  const target = ctx.targets[ctx.targetIndex];
  if (!target) {
    ctx.push({ type: "run_refused", error: { kind: "bad_model", message: `No provider target for model ${run.modelId}.` } });
    return;
  }
  // Checkpoints report the window of the target the pass runs on.
  if (target.contextWindow !== ctx.state.contextWindow) ctx.push({ type: "pass_target", contextWindow: target.contextWindow });
  const history = await historyRead;
  const pass = passRequest(ctx.state, history, {
    attempt,
    contextWindow: target.contextWindow,
    model: target.model,
    defaultInstructions: ctx.deps.defaultInstructions,
    nowMs: Date.now(),
  });
  if (pass.kind === "nothing_to_resume") {
    ctx.push({ type: "nothing_to_resume" });
    return;
  }
  if (pass.kind === "compact") {
    ctx.log.info({ estimate: pass.estimate, window: pass.window }, "compacting the conversation before the next pass");
    ctx.push({ type: "compaction_needed", coversBeforeSeq: pass.coversBeforeSeq });
    return;
  }
  // The flush that went out beside this preparation may have found the run fenced.
  if (ctx.lost) return;
  const controller = new AbortController();
  const token = ++ctx.callToken;
  ctx.model = { controller, token };
  ctx.detach(streamModelCall(ctx, token, controller, target, { modelCallId, attempt, instructions: pass.instructions, items: pass.items, tools: pass.tools, inputTokens: pass.inputTokens }));
}

/** The `abort_model_call` effect. */
export function abortModelCall(ctx: RunContext): void {
  ctx.model?.controller.abort();
  ctx.model = undefined;
}

async function streamModelCall(ctx: RunContext, token: number, controller: AbortController, target: ProviderTarget, req: PassCall): Promise<void> {
  const run = ctx.state.run!;
  const adapter = ctx.deps.adapterFor(target.kind);
  const live = () => ctx.model?.token === token && !controller.signal.aborted;
  const { inputTokens, ...call } = req;
  const info = attemptInfo(ctx, run, target, req.modelCallId, req.attempt, inputTokens);
  const admission = await ctx.meter.admitAttempt(info);
  if (!admission.ok) {
    ctx.telemetry.refused(admission.error);
    if (live()) ctx.push({ type: "model_failed", error: admission.error, usage: undefined });
    return;
  }
  ctx.meterTicket = admission.ticket;
  // The loop saves the new lease now (SnapshotSchedule), while the provider is asked, rather
  // than in front of the pass's first frame.
  if (admission.ticket !== undefined) ctx.queue.nudge();
  const startedAt = Date.now();
  let firstEventAt: number | undefined;
  let overhead: AttemptOverhead | undefined;
  let usage: Usage | undefined;
  let outcome: AttemptOutcome = "cancelled";
  const observed = ctx.telemetry.modelCall(target, { modelCallId: req.modelCallId, attempt: req.attempt, conversationId: run.conversationId }, promptContent(ctx, req));
  try {
    for await (const ev of adapter.stream({ ...call, target, signal: controller.signal })) {
      firstEventAt ??= Date.now();
      if (observed.chunk(ev.type === "text_delta" ? ev.text : undefined)) overhead = ctx.telemetry.firstChunk();
      if (ev.type === "completed") {
        usage = ev.usage;
        outcome = "ok";
        observed.completed(ev.usage, ev.stopReason, ev.responseModel);
        // Before the loop moves past the attempt (and snapshots that): its settlement rides in
        // the snapshot until it is done, for the next owner if this one dies first.
        ctx.unsettled.set(unsettledKey(req), {
          modelCallId: req.modelCallId,
          attempt: req.attempt,
          targetIndex: ctx.targetIndex,
          inputTokens,
          ticket: admission.ticket,
          result: { outcome, usage: ev.usage, ttftMs: firstEventAt - startedAt, ttftOverheadUs: undefined, durationMs: Date.now() - startedAt },
        });
      }
      if (!live()) return;
      ctx.push({ type: "model", event: ev, nowMs: Date.now() });
    }
  } catch (err) {
    const e = err instanceof ProviderError ? err : new ProviderError("network", "The model provider connection failed.", { cause: err });
    usage = e.partialUsage;
    if (!live() || e.kind === "cancelled") return;
    observed.failed(e.kind, e.partialUsage);
    outcome = (await onModelFailure(ctx, e, firstEventAt !== undefined, target, controller, inputTokens)) ? "retried" : "failed";
  } finally {
    observed.cancelled(); // no-op unless nothing above ended the call (aborted, superseded)
    const durationMs = Date.now() - startedAt;
    // The attempt's events are queued for the loop: once it has handled them, its first frame
    // (if any came of them) is on the bus and the gateway's overhead is known.
    if (overhead !== undefined && overhead.us === undefined) await ctx.framesOut();
    // Usage is never lost: exact where the provider reported it, else an estimate.
    const settled = usage ?? estimatedUsage(inputTokens, ctx.state.current?.text ?? "", ctx.state.current?.thinkingText ?? "", target.model);
    if (ctx.meterTicket === admission.ticket) ctx.meterTicket = undefined;
    await ctx.meter
      .settleAttempt(info, admission.ticket, {
        outcome,
        usage: settled,
        ttftMs: firstEventAt === undefined ? undefined : firstEventAt - startedAt,
        ttftOverheadUs: overhead?.us,
        durationMs,
      })
      .then(
        () => void ctx.unsettled.delete(unsettledKey(req)),
        (err: unknown) => {
          if (isStoreError(err, "fenced")) ctx.fencedOut("ledger");
          else ctx.log.error({ err }, "could not record the attempt's usage");
        },
      );
  }
}

const unsettledKey = (req: { modelCallId: string; attempt: number }) => `${req.modelCallId}:${req.attempt}`;

/** Carries out the failure policy's decision on a failed attempt; true when the model call goes on. */
async function onModelFailure(
  ctx: RunContext, e: ProviderError, sawEvent: boolean, target: ProviderTarget, controller: AbortController, inputTokens: number,
): Promise<boolean> {
  const phase = sawEvent ? "stream" : "connect";
  const next = decideAfterFailure(ctx.deps.retryPolicy, {
    error: e,
    phase,
    retriesSoFar: ctx.retries[phase],
    outputStarted: ctx.state.current?.outputStarted ?? false,
    targetsLeft: ctx.targets.length - ctx.targetIndex - 1,
    mayCompact: mayCompactAfterRefusal(ctx.state),
  }, Math.random);
  ctx.log.warn({ provider: target.kind, kind: e.kind, status: e.status, phase, next: next.action }, "model call failed");
  switch (next.action) {
    case "retry":
      ctx.retries[phase]++;
      ctx.telemetry.retried(target.kind, e.kind, "retry");
      await sleep(next.delayMs, controller.signal);
      if (controller.signal.aborted) return true;
      ctx.push({ type: "model_retry", retry: { retryNumber: next.retryNumber, maxRetries: next.maxRetries }, usage: e.partialUsage });
      return true;
    case "failover":
      ctx.targetIndex++;
      ctx.retries = { connect: 0, stream: 0 };
      ctx.log.warn({ from: target.kind, to: ctx.targets[ctx.targetIndex]?.kind }, "failing over to the next target");
      ctx.telemetry.retried(target.kind, e.kind, "failover");
      ctx.push({ type: "model_retry", retry: undefined, usage: e.partialUsage });
      return true;
    case "compact":
      if (await compactAfterRefusal(ctx, target, inputTokens)) return true;
      break;
    case "fail":
      break;
  }
  const compactionTried = ctx.state.compactedInTurn || ctx.state.compacting !== undefined;
  ctx.push({ type: "model_failed", error: runErrorFromProvider(e, target.credentialsSource, compactionTried), usage: e.partialUsage });
  return false;
}

/**
 * The provider refused the pass as longer than its context window: compact once this turn
 * (summary pass, recent tail verbatim) and retry, telling the user. The budgets use the
 * smaller of the route's window and the refused pass's size, since the refusal proves the
 * real window is smaller than that pass. False when there is nothing to compact.
 */
async function compactAfterRefusal(ctx: RunContext, target: ProviderTarget, refusedTokens: number): Promise<boolean> {
  const run = ctx.state.run;
  if (!run) return false;
  const window = Math.min(target.contextWindow ?? DEFAULT_CONTEXT_WINDOW, refusedTokens);
  const history = await conversationHistory(ctx, run);
  const coversBeforeSeq = overflowCut(history, window, target.model);
  if (coversBeforeSeq === undefined) return false;
  ctx.log.warn({ provider: target.kind, window, refusedTokens }, "the provider refused the pass as too long; compacting and retrying once");
  ctx.push({ type: "compaction_needed", coversBeforeSeq, refused: { window } });
  return true;
}

/**
 * The prompt a provider-call span may show: only for a tenant that opted in, and never for a
 * run in privacy mode (ghost mode or a retention that keeps no content).
 */
function promptContent(ctx: RunContext, req: PassCall): PromptContent | undefined {
  if (!ctx.deps.traceContent?.(ctx.ref.tenantId) || ctx.principal.ghostMode || ctx.contentMode !== "store") return undefined;
  return { instructions: req.instructions, items: req.items };
}

/** One provider attempt as metering sees it. */
export function attemptInfo(ctx: RunContext, run: RunStart, target: ProviderTarget, modelCallId: string, attempt: number, inputTokens: number): AttemptInfo {
  return {
    ref: ctx.ref,
    generation: ctx.generation,
    epoch: ctx.epoch,
    conversationId: run.conversationId,
    modelCallId,
    attempt,
    principal: ctx.principal,
    modelId: run.modelId,
    provider: target.kind,
    upstreamModel: target.model,
    credentialsSource: target.credentialsSource,
    estimatedInputTokens: inputTokens,
    maxOutputTokens: target.maxOutputTokens,
  };
}

/** Usage estimated for an attempt the provider never reported, from the text and thinking it streamed. */
export function estimatedUsage(inputTokens: number, text: string, thinking: string, model: string): Usage {
  return estimateUsage(inputTokens, { output: `${text}${thinking}`, reasoning: thinking }, model);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}
