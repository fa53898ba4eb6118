import { clone, create } from "@bufbuild/protobuf";
import {
  AgentMode, AgentRunRequestSchema, ConversationStateStructureSchema, ExecuteHookArgsSchema, type AgentRunRequest,
  type PrewarmRequest,
} from "@byok/wire";
import type { Usage } from "@byok/providers";
import type { ClientEvent } from "./classify.js";
import { buildCheckpoint, type TurnView } from "./checkpoint.js";
import { endFor, type EndDecision, type RunError } from "./errors.js";
import { frames } from "./frames.js";
import {
  endHeld, gateBlobGets, gateBlobResult, gateCheckpoint, gateEnd, gateFlushAll, gateFrames, gateTimeout, openGate,
  type GateResult, type OutputGate,
} from "./gate.js";
import { readRunStart, type RunStart } from "./run-request.js";
import { blobId, blobKey } from "./blobs.js";
import { importedHistory, missingBlobs, verifiedBlobs } from "./import.js";
import { startAttempt, translateEvent, type AttemptTranslation } from "./translate.js";
import { addUsage, ZERO_USAGE } from "./usage.js";
import type { Draft, Effect, Phase, RunEvent, RunPolicy, RunState } from "./run-types.js";
import {
  abortPendingExecs, backgroundCall, restartToolTimers, cancelSubagent, onBackgroundCompletions, onExecControl, onExecMessage, onInteractionResponse, onToolTimeout,
  onWebSearchResult, startTools,
} from "./tool-loop.js";

export type { Effect, HistoryRecord, Phase, RunEvent, RunPolicy, RunState } from "./run-types.js";
export { toolContextOf, type ToolLoop, type PendingTool } from "./tool-loop.js";

/**
 * The per-generation run state machine. Pure: `step(state, event)` returns the next state and
 * the effects the engine must carry out, in order. No I/O, no timers, no randomness.
 *
 *   awaiting_run ──run_request──▶ model_call ──completed──▶ finishing ──blobs acked / timeout──▶ ended (ok)
 *        │                           │  ├─retry──▶ model_call (next attempt, notice frame)
 *        │                           │  └─failed / cancel / reader gone / cap──▶ (finishing ▶) ended (error)
 *        └──cancel / reader gone──▶ ended (canceled)
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
    compacting: undefined, compactedInTurn: false,
  };
}

export function modelCallIdFor(generation: number, n: number): string {
  return `g${generation}m${n}`;
}

/** Context-window size the checkpoint reports when the route does not say. */
export const DEFAULT_CONTEXT_WINDOW = 200_000;

/** Routes drafts through the output gate and derives the phase (`finishing` while an end is held). */
function gated(s: RunState, drafts: Draft[]): { state: RunState; effects: Effect[] } {
  let cur = s;
  const effects: Effect[] = [];
  const take = (r: GateResult) => {
    cur = { ...cur, gate: r.gate };
    effects.push(...r.effects);
  };
  for (const d of drafts) {
    if (d.type === "emit") take(gateFrames(cur.gate, d.frames));
    else if (d.type === "end") take(gateEnd(cur.gate, d.decision));
    else if (d.type === "checkpoint") {
      const cp = checkpointOf(cur, d.steps, d.pendingToolCalls ?? []);
      if (cp) take(gateCheckpoint(cur.gate, cp.state, cp.blobs));
    } else if (d.type === "next_pass") {
      const n = cur.modelCalls + 1;
      const modelCallId = modelCallIdFor(cur.generation, n);
      // Context injected while tools ran reaches the model with this pass.
      if (cur.injections.length) {
        // After the pass's tool results, so the provider sees a valid message order.
        effects.push({
          type: "record_history",
          entries: cur.injections.map((i) => ({ kind: "user" as const, body: { text: i.text, injectionId: i.id, injected: i.kind }, interrupted: false })),
        });
        take(gateFrames(cur.gate, cur.injections.map((i) => frames.contextInjection(i.id, "delivered", { step: n }))));
        cur = { ...cur, injections: [] };
      }
      cur = { ...cur, phase: "model_call", modelCalls: n, attempt: 1, current: startAttempt(modelCallId) };
      effects.push({ type: "start_model_call", modelCallId, attempt: 1 });
    } else effects.push(d);
  }
  const ended = effects.some((e) => e.type === "end");
  const phase: Phase = ended ? "ended" : endHeld(cur.gate) ? "finishing" : cur.phase;
  return { state: { ...cur, phase }, effects };
}

/** Runs a tool-loop step and gates its drafts. */
function toolStep(r: { state: RunState; drafts: Draft[] }): { state: RunState; effects: Effect[] } {
  return gated(r.state, r.drafts);
}

/** Applies a gate result whose effects are final output (never gated again). */
function fromGate(s: RunState, r: GateResult): { state: RunState; effects: Effect[] } {
  const ended = r.effects.some((e) => e.type === "end");
  const phase: Phase = ended ? "ended" : endHeld(r.gate) ? "finishing" : s.phase;
  return { state: { ...s, gate: r.gate, phase }, effects: r.effects };
}

function checkpointOf(s: RunState, steps: TurnView["steps"], pendingToolCalls: readonly string[] = []) {
  const run = s.run;
  if (!run) return undefined;
  const used = s.usage.inputTokens + s.usage.cacheReadTokens + s.usage.cacheWriteTokens + s.usage.outputTokens;
  return buildCheckpoint(
    run.conversationState,
    { requestId: s.requestId, userText: run.userText, messageId: run.messageId, mode: s.mode, steps },
    { used, max: DEFAULT_CONTEXT_WINDOW },
    pendingToolCalls,
    s.todos,
    s.summary,
    s.plan?.plan,
  );
}

/** Steps and history of the current attempt's output so far. */
function attemptOutput(t: AttemptTranslation, attempt: number): { steps: TurnView["steps"]; assistant: Record<string, unknown> | undefined } {
  const steps: TurnView["steps"] = [];
  if (t.thinkingText) {
    steps.push({ case: "thinkingMessage", value: { $typeName: "agent.v1.ThinkingMessage", text: t.thinkingText, durationMs: Math.round(t.thinkingMs) } });
  }
  if (t.text) steps.push({ case: "assistantMessage", value: { $typeName: "agent.v1.AssistantMessage", text: t.text } });
  const has = t.text || t.reasoning.length > 0 || t.toolCalls.length > 0;
  const assistant = has
    ? { text: t.text, reasoning: t.reasoning, toolCalls: t.toolCalls, modelCallId: t.modelCallId, attempt }
    : undefined;
  return { steps, assistant };
}

/**
 * Ends a run interrupted mid-call: keeps the partial output (history, and a final checkpoint
 * when a client is there to receive it), then ends with `decision`.
 */
function endInterrupted(s: RunState, decision: EndDecision, opts: { abort: boolean; checkpoint: boolean }): { state: RunState; effects: Effect[] } {
  const drafts: Draft[] = [];
  if (opts.abort) drafts.push({ type: "abort_model_call" });
  // Pending client executions are aborted (PROTOCOL.md "Ending a stream").
  if (s.phase === "tools") drafts.push(...abortPendingExecs(s));
  let steps = s.steps;
  if (s.current) {
    const out = attemptOutput(s.current, s.attempt);
    steps = [...steps, ...out.steps];
    if (out.assistant) drafts.push({ type: "record_history", entries: [{ kind: "assistant", body: out.assistant, interrupted: true }] });
  }
  if (opts.checkpoint) drafts.push({ type: "checkpoint", steps });
  drafts.push({ type: "end", decision });
  return gated({ ...s, steps, current: undefined, tools: undefined }, drafts);
}

export function step(s: RunState, ev: RunEvent): { state: RunState; effects: Effect[] } {
  if (s.phase === "ended") return { state: s, effects: [] };
  if (s.phase === "finishing") return onFinishing(s, ev);
  switch (ev.type) {
    case "client":
      return onClient(s, ev.event);
    case "model": {
      if (s.phase !== "model_call" || !s.current) return { state: s, effects: [] };
      const r = translateEvent(s.current, ev.event, ev.nowMs);
      const summarizing = s.run?.kind === "summarize" || s.compacting !== undefined;
      // A summary pass streams nothing to the chat: its text becomes the `summary` update.
      const drafts: Draft[] = r.frames.length && !summarizing ? [{ type: "emit", frames: r.frames }] : [];
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
      if (summarizing) {
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
    case "model_retry": {
      if (s.phase !== "model_call" || !s.current) return { state: s, effects: [] };
      const drafts: Draft[] = [];
      const out = attemptOutput(s.current, s.attempt);
      // Output the client already saw stays in history, marked interrupted; the re-run starts
      // from stored history, after a notice that tells the user what happened.
      if (out.assistant) drafts.push({ type: "record_history", entries: [{ kind: "assistant", body: out.assistant, interrupted: true }] });
      if (s.current.outputStarted) drafts.push({ type: "emit", frames: [frames.textDelta(ev.notice, true)] });
      const attempt = s.attempt + 1;
      const modelCallId = s.current.modelCallId;
      drafts.push({ type: "start_model_call", modelCallId, attempt });
      return gated(
        {
          ...s,
          attempt,
          steps: [...s.steps, ...out.steps],
          usage: ev.usage ? addUsage(s.usage, ev.usage) : s.usage,
          current: startAttempt(modelCallId),
        },
        drafts,
      );
    }
    case "model_failed": {
      const withUsage = ev.usage ? { ...s, usage: addUsage(s.usage, ev.usage) } : s;
      return endInterrupted(withUsage, endFor(ev.error), { abort: false, checkpoint: true });
    }
    case "run_refused":
      return gated(s, [{ type: "end", decision: endFor(ev.error) }]);
    case "reader_gone":
      // Nobody is there to acknowledge checkpoint blobs: history keeps the partial output.
      return endInterrupted(s, endFor({ kind: "canceled", message: "The client went away and did not reconnect in time; the run was canceled." }), {
        abort: s.phase === "model_call",
        checkpoint: false,
      });
    case "output_cap":
      // The output stream is full: nothing more can be appended, not even a checkpoint.
      return endInterrupted(
        s,
        endFor({ kind: "output_cap", message: `The run produced more than ${ev.limit} frames, the gateway's output limit for one run.` }),
        { abort: s.phase === "model_call", checkpoint: false },
      );
    case "kv_timeout": {
      return fromGate(s, gateTimeout(s.gate, ev.seq));
    }
    case "resume":
      if (s.phase === "model_call" && s.current) return step(s, { type: "model_retry", notice: ev.notice, usage: undefined });
      // Waiting on tools: the previous owner's timers died with it; start them again.
      if (s.phase === "tools") return { state: s, effects: restartToolTimers(s) };
      return { state: s, effects: [] };
    case "tool_timeout":
      if (s.compacting?.hook?.id === ev.bridgeId) return afterPreCompact(s, undefined);
      return s.phase === "tools" ? toolStep(onToolTimeout(s, ev.callId, ev.bridgeId)) : { state: s, effects: [] };
    case "history_state": {
      if (s.phase !== "importing" || !s.run) return { state: s, effects: [] };
      if (ev.known) return beginRun({ ...s, phase: "awaiting_run" });
      const v = verifiedBlobs(s.run.preFetchedBlobs);
      const r = continueImport(s, v.have, new Map());
      const log: Effect[] = v.rejected ? [{ type: "log", level: "warn", message: "pre-fetched blobs failed SHA-256 verification and were ignored", fields: { rejected: v.rejected } }] : [];
      return { state: r.state, effects: [...log, ...r.effects] };
    }
    case "import_timeout":
      return s.phase === "importing" && s.importing ? finishImport(s, s.importing.have) : { state: s, effects: [] };
    case "compaction_needed": {
      if (s.phase !== "model_call" || !s.current || s.compacting || s.compactedInTurn) return { state: s, effects: [] };
      // summary_started → [pre_compact hook] → a summary pass (not streamed) → summary → summary_completed.
      if (!declaresPreCompact(s.run)) {
        return gated({ ...s, compacting: { coversBeforeSeq: ev.coversBeforeSeq, hook: undefined, hookMessage: undefined } }, [
          { type: "emit", frames: [frames.summaryStarted()] },
          { type: "start_model_call", modelCallId: s.current.modelCallId, attempt: s.attempt },
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
      return gated({ ...s, tools, compacting: { coversBeforeSeq: ev.coversBeforeSeq, hook: { id, execId }, hookMessage: undefined } }, [
        { type: "emit", frames: [frames.summaryStarted(), frames.exec(id, execId, { case: "executeHookArgs", value: hookRequest })] },
        { type: "tool_timer", callId: execId, bridgeId: id, ms: s.policy.toolTimeoutMs },
      ]);
    }
    case "superseded":
      if (s.phase === "awaiting_run" || s.phase === "importing") return { state: s, effects: [] };
      return endInterrupted(s, endFor({ kind: "canceled", message: "A newer run in this conversation superseded this one." }), {
        abort: s.phase === "model_call",
        checkpoint: false,
      });
    case "prewarm_expired":
      return s.phase === "awaiting_run" && s.prewarm ? gated(s, [{ type: "end", decision: { ok: true } }]) : { state: s, effects: [] };
    case "nothing_to_resume":
      // Resume with nothing waiting or interrupted: end cleanly.
      return gated({ ...s, current: undefined }, [{ type: "abort_model_call" }, { type: "checkpoint", steps: s.steps }, { type: "end", decision: { ok: true } }]);
    case "web_search_result":
      return s.phase === "tools" ? toolStep(onWebSearchResult(s, ev.callId, ev.result)) : { state: s, effects: [] };
  }
}

function onClient(s: RunState, e: ClientEvent): { state: RunState; effects: Effect[] } {
  switch (e.kind) {
    case "run_request": {
      if (s.phase !== "awaiting_run") {
        return { state: s, effects: [{ type: "log", level: "warn", message: "second run_request in one generation ignored" }] };
      }
      const run = readRunStart(s.prewarm ? withPrewarm(e.request, s.prewarm) : e.request, s.requestId);
      const opened: RunState = {
        ...s, run, mode: run.mode,
        // Blobs the client's own state references are blobs it has.
        gate: openGate(clientBlobIds(run)),
      };
      if (run.conversationState?.turns.length) {
        // The client holds earlier turns: import them unless the store already has the conversation.
        return { state: { ...opened, phase: "importing" }, effects: [{ type: "check_history", conversationId: run.conversationId }] };
      }
      return beginRun(opened);
    }
    case "prewarm_request": {
      if (s.phase !== "awaiting_run" || s.prewarm) return ignored(s, e.kind);
      // Prepare without calling a provider: the client's state as the first checkpoint, then
      // heartbeats (from the ingress) until the run_request comes or the TTL ends it with {}.
      const base = e.request.conversationState ? clone(ConversationStateStructureSchema, e.request.conversationState) : create(ConversationStateStructureSchema, {});
      const gate = openGate(base.turns.filter((t) => t.byteLength === 32));
      const r = gateCheckpoint(gate, base, []);
      return { state: { ...s, prewarm: e.request, gate: r.gate }, effects: [...r.effects, { type: "prewarm_wait" }] };
    }
    case "conversation_action":
      if (e.actionKind === "cancelAction") {
        const reason = e.action.action.case === "cancelAction" && e.action.action.value.reason;
        return endInterrupted(s, endFor({ kind: "canceled", message: reason ? `Canceled: ${reason}` : "Canceled by the client." }), {
          abort: s.phase === "model_call",
          checkpoint: s.phase === "model_call" || s.phase === "tools",
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
      return s.phase === "tools" ? toolStep(onExecMessage(s, e.message)) : ignored(s, e.kind);
    case "exec_client_control_message":
      return s.phase === "tools" ? toolStep(onExecControl(s, e.message)) : { state: s, effects: [] };
    case "interaction_response":
      return s.phase === "tools" ? toolStep(onInteractionResponse(s, e.message)) : ignored(s, e.kind);
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

/** A top-level conversation_action on a live run: acts on it, supersedes nothing (PROTOCOL.md). */
function onLiveAction(s: RunState, action: Extract<ClientEvent, { kind: "conversation_action" }>["action"]): { state: RunState; effects: Effect[] } {
  const a = action.action;
  switch (a.case) {
    case "backgroundShellAction":
    case "backgroundSubagentAction":
      return s.phase === "tools" ? toolStep(backgroundCall(s, a.value.toolCallId)) : ignored(s, a.case);
    case "cancelSubagentAction":
      return s.phase === "tools" ? toolStep(cancelSubagent(s, a.value.subagentId)) : ignored(s, a.case);
    case "backgroundTaskCompletionAction":
      return s.phase === "tools" ? toolStep(onBackgroundCompletions(s, a.value.completions)) : ignored(s, a.case);
    case "injectContextAction": {
      const { injectionId, expectedRunId } = a.value;
      const live = s.phase === "model_call" || s.phase === "tools";
      const reason = !live
        ? "the run is not running"
        : expectedRunId && s.run?.runId && expectedRunId !== s.run.runId
          ? `the running run is ${s.run.runId}, not ${expectedRunId}`
          : a.value.payload.case === undefined
            ? "the injection carries no context"
            : undefined;
      if (reason) return gated(s, [{ type: "emit", frames: [frames.contextInjection(injectionId, "rejected", { reason })] }]);
      const p = a.value.payload;
      const text = p.case === "userContext" ? (p.value.userMessage?.text ?? "") : p.case === "systemContext" ? `[${p.value.producer}] ${p.value.content}` : "";
      return gated({ ...s, injections: [...s.injections, { id: injectionId, text, kind: a.value.payload.case ?? "" }] }, [
        { type: "emit", frames: [frames.contextInjection(injectionId, "queued")] },
      ]);
    }
    default:
      return { state: s, effects: [{ type: "log", level: "info", message: "conversation action has no effect on a live run", fields: { action: a.case } }] };
  }
}


/** Starts the run proper: user entry, first checkpoint, first model call (or the no-call actions). */
function beginRun(opened: RunState): { state: RunState; effects: Effect[] } {
  const s = opened;
  const run = opened.run!;
  const modelCallId = modelCallIdFor(s.generation, 1);
  const userEntry: Draft[] = run.userText
    ? [{ type: "record_history", entries: [{ kind: "user", body: { text: run.userText, messageId: run.messageId, mode: run.mode, action: run.kind }, interrupted: false }] }]
    : [];
  if (run.kind === "shell_command") {
    // Recorded into the conversation; no provider call.
    return gated({ ...opened, phase: "model_call" }, [
      { type: "record_history", entries: [{ kind: "user", body: { text: `The user ran a shell command: ${run.userText}`, action: run.kind }, interrupted: false }] },
      { type: "checkpoint", steps: [] },
      { type: "emit", frames: [frames.turnEnded(s.usage)] },
      { type: "end", decision: { ok: true } },
    ]);
  }
  const started: RunState = { ...opened, phase: "model_call", modelCalls: 1, attempt: 1, current: startAttempt(modelCallId) };
  return gated(started, [
    ...userEntry,
    { type: "checkpoint", steps: [] },
    ...(run.kind === "summarize" ? [{ type: "emit" as const, frames: [frames.summaryStarted()] }] : []),
    { type: "start_model_call", modelCallId, attempt: 1 },
  ]);
}

/** Import of a client-held conversation: resolve blobs (inline, verified pre-fetched, get_blob_args). */
function continueImport(s: RunState, have: ReadonlyMap<string, Uint8Array>, pending: ReadonlyMap<number, string>): { state: RunState; effects: Effect[] } {
  const turns = s.run!.conversationState?.turns ?? [];
  const pendingKeys = new Set(pending.values());
  const missing = missingBlobs(turns, have).filter((id) => !pendingKeys.has(blobKey(id)));
  if (missing.length === 0 && pending.size === 0) return finishImport(s, have);
  if (missing.length === 0) return { state: { ...s, importing: { have, pending } }, effects: [] };
  const g = gateBlobGets(s.gate, missing);
  const all = new Map([...pending, ...g.kvIds]);
  return {
    state: { ...s, gate: g.gate, importing: { have, pending: all } },
    effects: [{ type: "emit", frames: g.frames }, { type: "import_wait" }],
  };
}

function finishImport(s: RunState, have: ReadonlyMap<string, Uint8Array>): { state: RunState; effects: Effect[] } {
  const entries = importedHistory(s.run!.conversationState?.turns ?? [], have);
  const blobs = [...have].map(([k, data]) => ({ id: new Uint8Array(Buffer.from(k, "hex")), data }));
  const begun = beginRun({ ...s, phase: "awaiting_run", importing: undefined });
  const pre: Effect[] = [];
  if (blobs.length) pre.push({ type: "store_blobs", blobs });
  if (entries.length) pre.push({ type: "record_history", entries });
  return { state: begun.state, effects: [...pre, ...begun.effects] };
}

/** Whether the client declared a pre-compaction hook (PROTOCOL.md "Hooks": `pre_compact`). */
function declaresPreCompact(run: RunStart | undefined): boolean {
  return (run?.hookSteps ?? []).some((h) => h.replace(/[_-]/g, "").toLowerCase() === "precompact");
}

/** The pre_compact hook answered (or timed out): run the summary pass, guided by its reply. */
function afterPreCompact(s: RunState, hookMessage: string | undefined): { state: RunState; effects: Effect[] } {
  if (!s.compacting || !s.current) return { state: s, effects: [] };
  return gated({ ...s, compacting: { ...s.compacting, hook: undefined, hookMessage: hookMessage || undefined } }, [
    { type: "start_model_call", modelCallId: s.current.modelCallId, attempt: s.attempt },
  ]);
}

/** The run_request after a prewarm: what it leaves out comes from the prewarm. */
function withPrewarm(req: AgentRunRequest, p: PrewarmRequest): AgentRunRequest {
  const r = clone(AgentRunRequestSchema, req);
  if (!r.requestedModel?.modelId && !r.modelDetails?.modelId) {
    if (p.requestedModel) r.requestedModel = p.requestedModel;
    if (p.modelDetails) r.modelDetails = p.modelDetails;
  }
  if (!r.conversationState?.turns.length && p.conversationState) r.conversationState = p.conversationState;
  if (!r.conversationId && p.conversationId) r.conversationId = p.conversationId;
  if (!r.mcpTools?.mcpTools.length && p.mcpTools) r.mcpTools = p.mcpTools;
  if (r.customSystemPrompt === undefined && p.customSystemPrompt !== undefined) r.customSystemPrompt = p.customSystemPrompt;
  return r;
}

function ignored(s: RunState, kind: string): { state: RunState; effects: Effect[] } {
  return { state: s, effects: [{ type: "log", level: "info", message: "client message with nothing waiting for it ignored", fields: { kind } }] };
}

/** Blob ids the client's conversation_state references (its turns), as 32-byte ids. */
function clientBlobIds(run: RunStart): Uint8Array[] {
  return (run.conversationState?.turns ?? []).filter((t) => t.byteLength === 32);
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
    case "resume": {
      // The previous owner had decided the end but held it behind the final checkpoint.
      if (!ev.heldEnd) return { state: s, effects: [] };
      const drafts: Draft[] = [{ type: "checkpoint", steps: s.steps }];
      if (ev.heldEnd.ok) drafts.push({ type: "emit", frames: [frames.turnEnded(s.usage)] });
      drafts.push({ type: "end", decision: ev.heldEnd });
      return gated({ ...s, phase: "model_call" }, drafts);
    }
    default:
      return { state: s, effects: [] };
  }
}
