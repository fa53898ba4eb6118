import { clone, create } from "@bufbuild/protobuf";
import { AgentMode, ConversationStateStructureSchema, ExecuteHookArgsSchema } from "@byok/wire";
import type { ClientEvent } from "./classify.js";
import { endFor } from "./errors.js";
import { frames } from "./frames.js";
import { NOTICE } from "./notices.js";
import { causeOf, enter, isAwaitingRun, isCallingModel, isEnded, isFinishing, isImporting, isInTurn, isRunningTools, isSummarizing, type Transition } from "./phase.js";
import { gateBlobResult, gateCheckpoint, gateFlushAll, gateResume, gateTimeout, openGate } from "./gate.js";
import { readRunStart } from "./run-request.js";
import { blobId, blobKey } from "./blobs.js";
import { verifiedBlobs } from "./import.js";
import { startAttempt, translateEvent } from "./translate.js";
import { afterPreCompact, declaresPreCompact } from "./compaction.js";
import { onLiveAction } from "./live-actions.js";
import { beginRun, clientBlobIds, continueFromStored, continueImport, finishImport, withPrewarm } from "./run-start.js";
import {
  attemptOutput, DEFAULT_CONTEXT_WINDOW, endInterrupted, fromGate, gated, ignored, modelCallIdFor, toolStep,
} from "./transition.js";
import { addUsage, ZERO_USAGE } from "./usage.js";
import type { Draft, Effect, Phase, RunEvent, RunPolicy, RunState } from "./run-types.js";
import {
  onExecControl, onExecMessage, onInteractionResponse, onToolTimeout, onWebSearchResult, restartToolTimers, startTools,
} from "./tool-loop.js";

export type { Effect, HistoryRecord, PendingTool, Phase, RunEvent, RunPolicy, RunState, ToolLoop } from "./run-types.js";
export { toolContextOf } from "./tool-loop.js";
export { DEFAULT_CONTEXT_WINDOW, modelCallIdFor } from "./transition.js";

/**
 * The per-generation run state machine. Pure: `step(state, event)` returns the next state,
 * the effects the engine must carry out, in order, and the phase change it made (which the
 * engine records). No I/O, no timers, no randomness. The phases are drawn in
 * libs/protocol/README.md; phase.ts asks and changes them.
 *
 * Split by concern: run-start.ts (starting, import, prewarm), tool-loop.ts (tool phase),
 * live-actions.ts (actions on a live run), compaction.ts, transition.ts (shared machinery).
 *
 * Every frame leaves through the output gate (gate.ts): in production order, a checkpoint
 * holding what follows it until the client has its blobs.
 */
export const DEFAULT_RUN_POLICY: RunPolicy = { toolTimeoutMs: 600_000, webSearch: false };

export function initialRunState(requestId: string, generation: number, policy: RunPolicy = DEFAULT_RUN_POLICY): RunState {
  return {
    phase: "awaiting_run", requestId, generation, run: undefined, modelCalls: 0, attempt: 0,
    current: undefined, steps: [], usage: ZERO_USAGE, unknownLogged: false, gate: openGate(),
    mode: AgentMode.AGENT, todos: [], tools: undefined, plan: undefined, policy, injections: [], summary: undefined, prewarm: undefined, importing: undefined,
    compacting: undefined, compactedInTurn: false, contextWindow: undefined, storedBase: undefined,
  };
}

/** One step: the next state, the effects to carry out in order, and the phase change if any. */
export interface StepResult {
  state: RunState;
  effects: Effect[];
  transition: Transition | undefined;
}

export function step(s: RunState, ev: RunEvent): StepResult {
  const r = ev.type === "resume" ? resume(s, ev) : advance(s, ev);
  const transition = r.state.phase === s.phase ? undefined : { from: s.phase, to: r.state.phase, cause: causeOf(ev) };
  return { ...r, transition };
}

/**
 * A takeover, in any phase: first the output the previous owner held behind checkpoints (the
 * gate is in the snapshot) goes or waits again, then the phase picks up (a cut pass re-runs,
 * tool timers start again).
 */
function resume(s: RunState, ev: RunEvent): { state: RunState; effects: Effect[] } {
  if (isEnded(s)) return { state: s, effects: [] };
  const g = fromGate(s, gateResume(s.gate));
  if (isEnded(g.state)) return g;
  const r = advance(g.state, ev);
  return { state: r.state, effects: [...g.effects, ...r.effects] };
}

function advance(s: RunState, ev: RunEvent): { state: RunState; effects: Effect[] } {
  if (isEnded(s)) return { state: s, effects: [] };
  if (isFinishing(s)) return onFinishing(s, ev);
  switch (ev.type) {
    case "client":
      return onClient(s, ev.event);
    case "model": {
      if (!isCallingModel(s) || !s.current) return { state: s, effects: [] };
      const r = translateEvent(s.current, ev.event, ev.nowMs);
      // A summary pass streams nothing to the chat: its text becomes the `summary` update.
      const drafts: Draft[] = r.frames.length && !isSummarizing(s) ? [{ type: "emit", frames: r.frames }] : [];
      const next = { ...s, current: r.t };
      if (ev.event.type !== "completed") return gated(next, drafts);
      if (s.compacting) {
        // Automatic compaction done: the summary replaces older history; the real pass follows.
        const usage = addUsage(s.usage, ev.event.usage);
        const summary = r.t.text.trim();
        const n = s.modelCalls + 1;
        const modelCallId = modelCallIdFor(s.generation, n);
        return gated(
          { ...next, usage, summary, compacting: undefined, compactedInTurn: true, modelCalls: n, attempt: 1, current: startAttempt(modelCallId) },
          [
            {
              type: "record_history",
              entries: [{ kind: "summary", body: { text: summary, coversBeforeSeq: s.compacting.coversBeforeSeq, modelCallId: r.t.modelCallId, attempt: s.attempt }, interrupted: false }],
            },
            { type: "emit", frames: [frames.summary(summary), frames.summaryCompleted(s.compacting.hookMessage)] },
            { type: "start_model_call", modelCallId, attempt: 1 },
          ],
        );
      }
      if (isSummarizing(s)) {
        const usage = addUsage(s.usage, ev.event.usage);
        const summary = r.t.text.trim();
        const done: RunState = { ...next, usage, current: undefined, summary };
        return gated(done, [
          { type: "record_history", entries: [{ kind: "summary", body: { text: summary, modelCallId: r.t.modelCallId, attempt: s.attempt }, interrupted: false }] },
          { type: "emit", frames: [frames.summary(summary), frames.summaryCompleted()] },
          { type: "checkpoint", steps: s.steps },
          { type: "emit", frames: [frames.turnEnded(usage)] },
          { type: "end", decision: { ok: true } },
        ]);
      }
      const out = attemptOutput(r.t, s.attempt);
      const usage = addUsage(s.usage, ev.event.usage);
      const steps = [...s.steps, ...out.steps];
      if (out.assistant) drafts.push({ type: "record_history", entries: [{ kind: "assistant", body: out.assistant, interrupted: false }] });
      const done: RunState = { ...next, usage, steps, current: undefined };
      if (r.t.toolCalls.length > 0) {
        // The model asked for tools: run them through the bridges, then the next pass.
        const t = startTools(done, r.t.toolCalls, r.t.modelCallId, ev.nowMs);
        return gated(t.state, [...drafts, ...t.drafts]);
      }
      // The turn is done: final checkpoint, turn_ended with usage summed over attempts, end {}.
      drafts.push({ type: "checkpoint", steps }, { type: "emit", frames: [frames.turnEnded(usage)] }, { type: "end", decision: { ok: true } });
      return gated(done, drafts);
    }
    case "model_retry":
      return retryAttempt(s, ev.retry && NOTICE.reconnecting(ev.retry.retryNumber, ev.retry.maxRetries), ev.usage);
    case "model_failed": {
      const withUsage = ev.usage ? { ...s, usage: addUsage(s.usage, ev.usage) } : s;
      return endInterrupted(withUsage, endFor(ev.error), { abort: false, checkpoint: true, interruptedBy: "The model call failed" });
    }
    case "run_refused":
      return gated(s, [{ type: "end", decision: endFor(ev.error) }]);
    case "reader_gone":
      // Nobody is there to acknowledge checkpoint blobs: history keeps the partial output.
      return endInterrupted(s, endFor({ kind: "canceled", message: "The client went away and did not reconnect in time; the run was canceled." }), {
        abort: isCallingModel(s),
        checkpoint: false,
        interruptedBy: "The user's editor disconnected while this tool call was pending",
      });
    case "output_cap":
      // The output stream is full: nothing more can be appended, not even a checkpoint.
      return endInterrupted(
        s,
        endFor({ kind: "output_cap", message: `The run produced more than ${ev.limit} frames, the gateway's output limit for one run.` }),
        { abort: isCallingModel(s), checkpoint: false, interruptedBy: "The run reached the gateway's output limit while this tool call was pending" },
      );
    case "kv_timeout": {
      return fromGate(s, gateTimeout(s.gate, ev.seq));
    }
    case "resume":
      if (isCallingModel(s) && s.current) return retryAttempt(s, NOTICE.takenOver, undefined);
      // Waiting on tools: the previous owner's timers died with it; start them again.
      if (isRunningTools(s)) return { state: s, effects: restartToolTimers(s) };
      return { state: s, effects: [] };
    case "tool_timeout":
      if (s.compacting?.hook?.id === ev.bridgeId) return afterPreCompact(s, undefined);
      return isRunningTools(s) ? toolStep(onToolTimeout(s, ev.callId, ev.bridgeId)) : { state: s, effects: [] };
    case "history_state": {
      if (!isImporting(s) || !s.run) return { state: s, effects: [] };
      if (ev.known) return beginRun(enter(s, "awaiting_run"));
      // Blobs the store holds (each checked against its id) are not asked of the client again.
      const v = verifiedBlobs([...s.run.preFetchedBlobs, ...ev.blobs.map((b) => ({ id: b.id, value: b.data }))]);
      const r = continueImport(s, v.have, new Map());
      const log: Effect[] = v.rejected ? [{ type: "log", level: "warn", message: "pre-fetched blobs failed SHA-256 verification and were ignored", fields: { rejected: v.rejected } }] : [];
      return { state: r.state, effects: [...log, ...r.effects] };
    }
    case "checkpoint_loaded":
      if (!isImporting(s) || !s.run || s.importing) return { state: s, effects: [] };
      return continueFromStored(s, ev.stored);
    case "pass_target":
      return { state: { ...s, contextWindow: ev.contextWindow }, effects: [] };
    case "import_timeout":
      return isImporting(s) && s.importing ? finishImport(s, s.importing.have) : { state: s, effects: [] };
    case "compaction_needed": {
      if (!isCallingModel(s) || !s.current || s.compacting || s.compactedInTurn) return { state: s, effects: [] };
      // summary_started → [pre_compact hook] → a summary pass (not streamed) → summary → summary_completed.
      // After a provider's refusal the summary pass is the call's next attempt, after a notice.
      const refused = ev.refused;
      const attempt = refused ? s.attempt + 1 : s.attempt;
      const notice: Draft[] = refused ? [{ type: "emit", frames: [frames.textDelta(NOTICE.compacting, true)] }] : [];
      const base: RunState = { ...s, attempt, current: refused ? startAttempt(s.current.modelCallId) : s.current };
      const compacting = { coversBeforeSeq: ev.coversBeforeSeq, window: refused?.window, hookMessage: undefined };
      if (!declaresPreCompact(s.run)) {
        return gated({ ...base, compacting: { ...compacting, hook: undefined } }, [
          ...notice,
          { type: "emit", frames: [frames.summaryStarted()] },
          { type: "start_model_call", modelCallId: s.current.modelCallId, attempt },
        ]);
      }
      const id = s.tools?.nextExecId ?? 1;
      const execId = `${s.current.modelCallId}-hook${id}`;
      const tools = { modelCallId: s.current.modelCallId, nextExecId: id >= 0xffffffff ? 1 : id + 1, nextInteractionId: s.tools?.nextInteractionId ?? 1, calls: [] };
      const hookRequest = create(ExecuteHookArgsSchema, {
        request: {
          request: {
            case: "preCompact",
            value: { trigger: "auto", conversationId: s.run?.conversationId, modelId: s.run?.modelId, isFirstCompaction: s.summary === undefined },
          },
        },
      });
      return gated({ ...base, tools, compacting: { ...compacting, hook: { id, execId } } }, [
        ...notice,
        { type: "emit", frames: [frames.summaryStarted(), frames.exec(id, execId, { case: "executeHookArgs", value: hookRequest })] },
        { type: "tool_timer", callId: execId, bridgeId: id, ms: s.policy.toolTimeoutMs },
      ]);
    }
    case "superseded":
      if (isAwaitingRun(s) || isImporting(s)) return { state: s, effects: [] };
      return endInterrupted(s, endFor({ kind: "canceled", message: "A newer run in this conversation superseded this one." }), {
        abort: isCallingModel(s),
        checkpoint: false,
        interruptedBy: "The user sent a new message while this tool call was pending",
      });
    case "prewarm_expired":
      return isAwaitingRun(s) && s.prewarm ? gated(s, [{ type: "end", decision: { ok: true } }]) : { state: s, effects: [] };
    case "nothing_to_resume":
      // Resume with nothing waiting or interrupted: end cleanly.
      return gated({ ...s, current: undefined }, [{ type: "abort_model_call" }, { type: "checkpoint", steps: s.steps }, { type: "end", decision: { ok: true } }]);
    case "web_search_result":
      return isRunningTools(s) ? toolStep(onWebSearchResult(s, ev.callId, ev.result)) : { state: s, effects: [] };
  }
}

/**
 * Re-runs the current model call as its next attempt. Output the client already saw stays in
 * history, marked interrupted; the re-run starts from stored history, after `notice` (when the
 * client saw output) tells the user what happened.
 */
function retryAttempt(s: RunState, notice: string | undefined, usage: RunState["usage"] | undefined): { state: RunState; effects: Effect[] } {
  if (!isCallingModel(s) || !s.current) return { state: s, effects: [] };
  const drafts: Draft[] = [];
  const out = attemptOutput(s.current, s.attempt);
  if (out.assistant) drafts.push({ type: "record_history", entries: [{ kind: "assistant", body: out.assistant, interrupted: true }] });
  if (notice && s.current.outputStarted) drafts.push({ type: "emit", frames: [frames.textDelta(notice, true)] });
  const attempt = s.attempt + 1;
  const modelCallId = s.current.modelCallId;
  drafts.push({ type: "start_model_call", modelCallId, attempt });
  return gated(
    { ...s, attempt, steps: [...s.steps, ...out.steps], usage: usage ? addUsage(s.usage, usage) : s.usage, current: startAttempt(modelCallId) },
    drafts,
  );
}

function onClient(s: RunState, e: ClientEvent): { state: RunState; effects: Effect[] } {
  switch (e.kind) {
    case "run_request": {
      if (!isAwaitingRun(s)) {
        return { state: s, effects: [{ type: "log", level: "warn", message: "second run_request in one generation ignored" }] };
      }
      const prewarm = s.prewarm ?? e.sharedPrewarm;
      const run = readRunStart(prewarm ? withPrewarm(e.request, prewarm) : e.request, s.requestId);
      const opened: RunState = {
        ...s, run, mode: run.mode,
        // Blobs the client's own state references are blobs it has.
        gate: openGate(clientBlobIds(run)),
      };
      if (run.conversationState?.turns.length) {
        // The client holds earlier turns: import them unless the store already has the conversation.
        return { state: enter(opened, "importing"), effects: [{ type: "check_history", conversationId: run.conversationId }] };
      }
      if (!run.conversationState && run.conversationId) {
        // No client state at all (it lost it, or keeps none): the stored checkpoint, if any, is the base.
        return { state: enter(opened, "importing"), effects: [{ type: "load_checkpoint", conversationId: run.conversationId }] };
      }
      return beginRun(opened);
    }
    case "prewarm_request": {
      if (!isAwaitingRun(s) || s.prewarm) return ignored(s, e.kind);
      // Prepare without calling a provider: the client's state as the first checkpoint, then
      // heartbeats (from the ingress) until the run_request comes or the TTL ends it with {}.
      const base = e.request.conversationState ? clone(ConversationStateStructureSchema, e.request.conversationState) : create(ConversationStateStructureSchema, {});
      const gate = openGate(base.turns.filter((t) => t.byteLength === 32));
      const r = gateCheckpoint(gate, base, []);
      const share: Effect[] = e.request.conversationId ? [{ type: "share_prewarm", conversationId: e.request.conversationId, request: e.request }] : [];
      return { state: { ...s, prewarm: e.request, gate: r.gate }, effects: [...r.effects, ...share, { type: "prewarm_wait" }] };
    }
    case "conversation_action":
      if (e.actionKind === "cancelAction") {
        const cancel = e.action.action.case === "cancelAction" ? e.action.action.value : undefined;
        const reason = cancel?.reason;
        return endInterrupted(s, endFor({ kind: "canceled", message: reason ? `Canceled: ${reason}` : "Canceled by the client." }), {
          abort: isCallingModel(s),
          checkpoint: isInTurn(s),
          interruptedBy: "The user canceled the run while this tool call was pending",
          resolutions: cancel?.interruptedPendingToolCallResolutions?.resolutions ?? [],
        });
      }
      return onLiveAction(s, e.action);
    case "kv_client_message":
      return onKv(s, e);
    case "exec_client_message":
      if (s.compacting?.hook?.id === e.message.id) {
        const m = e.message.message;
        const r = m.case === "executeHookResult" ? m.value.response?.response : undefined;
        return afterPreCompact(s, r?.case === "preCompact" ? r.value.userMessage : undefined);
      }
      return isRunningTools(s) ? toolStep(onExecMessage(s, e.message)) : ignored(s, e.kind);
    case "exec_client_control_message":
      return isRunningTools(s) ? toolStep(onExecControl(s, e.message)) : { state: s, effects: [] };
    case "interaction_response":
      return isRunningTools(s) ? toolStep(onInteractionResponse(s, e.message)) : ignored(s, e.kind);
    case "unknown":
      if (s.unknownLogged) return { state: s, effects: [] };
      return {
        state: { ...s, unknownLogged: true },
        effects: [{ type: "log", level: "info", message: "client message with no known branch accepted", fields: { unknownFields: e.unknownFieldNumbers } }],
      };
    case "client_heartbeat":
      return { state: s, effects: [] };
  }
}

function onKv(s: RunState, e: Extract<ClientEvent, { kind: "kv_client_message" }>): { state: RunState; effects: Effect[] } {
  const m = e.message.message;
  if (m.case === "getBlobResult" && s.importing) {
    const key = s.importing.pending.get(e.message.id);
    if (key === undefined) return { state: s, effects: [] };
    const pending = new Map(s.importing.pending);
    pending.delete(e.message.id);
    const have = new Map(s.importing.have);
    const data = m.value.blobData;
    // Trust a blob only if it hashes to the id it was asked for.
    if (data && blobKey(blobId(data)) === key) have.set(key, data);
    return continueImport(s, have, pending);
  }
  if (m.case !== "setBlobResult") {
    return { state: s, effects: [{ type: "log", level: "info", message: "kv client message ignored", fields: { branch: m.case } }] };
  }
  return fromGate(s, gateBlobResult(s.gate, e.message.id, m.value.error !== undefined));
}

/** A final checkpoint awaits its blobs: only KV results, timeouts and a vanished reader matter. */
function onFinishing(s: RunState, ev: RunEvent): { state: RunState; effects: Effect[] } {
  switch (ev.type) {
    case "client":
      return ev.event.kind === "kv_client_message" ? onKv(s, ev.event) : { state: s, effects: [] };
    case "kv_timeout": {
      return fromGate(s, gateTimeout(s.gate, ev.seq));
    }
    case "reader_gone":
    case "output_cap": {
      // Nobody will acknowledge: release what follows the checkpoints without them.
      return fromGate(s, gateFlushAll(s.gate));
    }
    default:
      return { state: s, effects: [] };
  }
}
