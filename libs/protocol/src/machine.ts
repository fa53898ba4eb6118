import type { AgentServerMessage } from "@byok/wire";
import type { ProviderEvent, Usage } from "@byok/providers";
import type { ClientEvent } from "./classify.js";
import { buildCheckpoint, type TurnView } from "./checkpoint.js";
import { endFor, type EndDecision, type RunError } from "./errors.js";
import { frames } from "./frames.js";
import { readRunStart, type RunStart } from "./run-request.js";
import { startAttempt, translateEvent, type AttemptTranslation } from "./translate.js";
import { addUsage, ZERO_USAGE } from "./usage.js";

/**
 * The per-generation run state machine. Pure: `step(state, event)` returns the next state and
 * the effects the engine must carry out, in order. No I/O, no timers, no randomness.
 *
 *   awaiting_run ──run_request──▶ model_call ──completed──▶ ended (ok)
 *        │                           │  ├─retry──▶ model_call (next attempt, notice frame)
 *        │                           │  └─failed / cancel / reader gone / cap──▶ ended (error)
 *        └──cancel / reader gone──▶ ended (canceled)
 */
export type Phase = "awaiting_run" | "model_call" | "ended";

export interface RunState {
  readonly phase: Phase;
  readonly requestId: string;
  readonly generation: number;
  readonly run: RunStart | undefined;
  /** Model calls started in this generation; ids derive from it. */
  readonly modelCalls: number;
  readonly attempt: number;
  readonly current: AttemptTranslation | undefined;
  /** Completed steps of the turn, for checkpoints. */
  readonly steps: TurnView["steps"];
  /** Usage summed over every attempt of the turn. */
  readonly usage: Usage;
  readonly unknownLogged: boolean;
}

export type RunEvent =
  | { type: "client"; event: ClientEvent }
  | { type: "model"; event: ProviderEvent; nowMs: number }
  /** The engine's retry policy decided to re-run the current model call. */
  | { type: "model_retry"; notice: string; usage: Usage | undefined }
  | { type: "model_failed"; error: RunError; usage: Usage | undefined }
  /** The run cannot start (routing refused, unknown model ...). */
  | { type: "run_refused"; error: RunError }
  | { type: "reader_gone" }
  | { type: "output_cap"; limit: number };

/** A history entry the engine stores (kind + JSON body), see docs/architecture.md. */
export interface HistoryRecord {
  kind: "user" | "assistant";
  body: Record<string, unknown>;
  interrupted: boolean;
}

export type Effect =
  | { type: "emit"; frames: AgentServerMessage[] }
  | { type: "start_model_call"; modelCallId: string; attempt: number }
  | { type: "abort_model_call" }
  | { type: "record_history"; entries: HistoryRecord[] }
  | { type: "end"; decision: EndDecision }
  | { type: "log"; level: "info" | "warn"; message: string; fields?: Record<string, unknown> };

export function initialRunState(requestId: string, generation: number): RunState {
  return {
    phase: "awaiting_run", requestId, generation, run: undefined, modelCalls: 0, attempt: 0,
    current: undefined, steps: [], usage: ZERO_USAGE, unknownLogged: false,
  };
}

export function modelCallIdFor(generation: number, n: number): string {
  return `g${generation}m${n}`;
}

/** Context-window size the checkpoint reports when the route does not say. */
export const DEFAULT_CONTEXT_WINDOW = 200_000;

function checkpointOf(s: RunState, steps: TurnView["steps"]): AgentServerMessage {
  const run = s.run!;
  const used = s.usage.inputTokens + s.usage.cacheReadTokens + s.usage.cacheWriteTokens + s.usage.outputTokens;
  return frames.checkpoint(
    buildCheckpoint(
      run.conversationState,
      { requestId: s.requestId, userText: run.userText, messageId: run.messageId, mode: run.mode, steps },
      used,
      DEFAULT_CONTEXT_WINDOW,
    ),
  );
}

/** Steps and history of the current attempt's output so far. */
function attemptOutput(t: AttemptTranslation, attempt: number): { steps: TurnView["steps"]; assistant: Record<string, unknown> | undefined } {
  const steps: TurnView["steps"] = [];
  if (t.thinkingText) steps.push({ kind: "thinking", text: t.thinkingText, durationMs: t.thinkingMs });
  if (t.text) steps.push({ kind: "assistant", text: t.text });
  const has = t.text || t.reasoning.length > 0 || t.toolCalls.length > 0;
  const assistant = has
    ? { text: t.text, reasoning: t.reasoning, toolCalls: t.toolCalls, modelCallId: t.modelCallId, attempt }
    : undefined;
  return { steps, assistant };
}

function endWith(s: RunState, decision: EndDecision, extra: Effect[] = []): { state: RunState; effects: Effect[] } {
  return { state: { ...s, phase: "ended" }, effects: [...extra, { type: "end", decision }] };
}

/** Ends a run that was interrupted mid-call: keeps the partial output (history + checkpoint). */
function endInterrupted(s: RunState, decision: EndDecision, abort: boolean): { state: RunState; effects: Effect[] } {
  const effects: Effect[] = [];
  if (abort) effects.push({ type: "abort_model_call" });
  let steps = s.steps;
  if (s.current && s.run) {
    const out = attemptOutput(s.current, s.attempt);
    steps = [...steps, ...out.steps];
    if (out.assistant) effects.push({ type: "record_history", entries: [{ kind: "assistant", body: out.assistant, interrupted: true }] });
    effects.push({ type: "emit", frames: [checkpointOf(s, steps)] });
  }
  return endWith({ ...s, steps, current: undefined }, decision, effects);
}

export function step(s: RunState, ev: RunEvent): { state: RunState; effects: Effect[] } {
  if (s.phase === "ended") return { state: s, effects: [] };
  switch (ev.type) {
    case "client":
      return onClient(s, ev.event);
    case "model": {
      if (s.phase !== "model_call" || !s.current) return { state: s, effects: [] };
      const r = translateEvent(s.current, ev.event, ev.nowMs);
      const effects: Effect[] = r.frames.length ? [{ type: "emit", frames: r.frames }] : [];
      const next = { ...s, current: r.t };
      if (ev.event.type !== "completed") return { state: next, effects };
      // The pass completed: final checkpoint, turn_ended with usage summed over attempts, end {}.
      const out = attemptOutput(r.t, s.attempt);
      const usage = addUsage(s.usage, ev.event.usage);
      const steps = [...s.steps, ...out.steps];
      const done: RunState = { ...next, usage, steps, current: undefined };
      if (out.assistant) effects.push({ type: "record_history", entries: [{ kind: "assistant", body: out.assistant, interrupted: false }] });
      effects.push({ type: "emit", frames: [checkpointOf(done, steps), frames.turnEnded(usage)] });
      return endWith(done, { ok: true }, effects);
    }
    case "model_retry": {
      if (s.phase !== "model_call" || !s.current) return { state: s, effects: [] };
      const effects: Effect[] = [];
      const out = attemptOutput(s.current, s.attempt);
      // Output the client already saw stays in history, marked interrupted; the re-run starts
      // from stored history, after a notice that tells the user what happened.
      if (out.assistant) effects.push({ type: "record_history", entries: [{ kind: "assistant", body: out.assistant, interrupted: true }] });
      if (s.current.outputStarted) effects.push({ type: "emit", frames: [frames.textDelta(ev.notice, true)] });
      const attempt = s.attempt + 1;
      const modelCallId = s.current.modelCallId;
      effects.push({ type: "start_model_call", modelCallId, attempt });
      return {
        state: {
          ...s,
          attempt,
          steps: [...s.steps, ...out.steps],
          usage: ev.usage ? addUsage(s.usage, ev.usage) : s.usage,
          current: startAttempt(modelCallId),
        },
        effects,
      };
    }
    case "model_failed": {
      const withUsage = ev.usage ? { ...s, usage: addUsage(s.usage, ev.usage) } : s;
      return endInterrupted(withUsage, endFor(ev.error), false);
    }
    case "run_refused":
      return endWith(s, endFor(ev.error));
    case "reader_gone":
      return endInterrupted(s, endFor({ kind: "canceled", message: "The client went away and did not reconnect in time; the run was canceled." }), s.phase === "model_call");
    case "output_cap":
      return endInterrupted(
        s,
        endFor({ kind: "output_cap", message: `The run produced more than ${ev.limit} frames, the gateway's output limit for one run.` }),
        s.phase === "model_call",
      );
  }
}

function onClient(s: RunState, e: ClientEvent): { state: RunState; effects: Effect[] } {
  switch (e.kind) {
    case "run_request": {
      if (s.phase !== "awaiting_run") {
        return { state: s, effects: [{ type: "log", level: "warn", message: "second run_request in one generation ignored" }] };
      }
      const run = readRunStart(e.request, s.requestId);
      const modelCallId = modelCallIdFor(s.generation, 1);
      const next: RunState = { ...s, phase: "model_call", run, modelCalls: 1, attempt: 1, current: startAttempt(modelCallId) };
      return {
        state: next,
        effects: [
          { type: "record_history", entries: [{ kind: "user", body: { text: run.userText, messageId: run.messageId, mode: run.mode }, interrupted: false }] },
          { type: "emit", frames: [checkpointOf(next, [])] },
          { type: "start_model_call", modelCallId, attempt: 1 },
        ],
      };
    }
    case "conversation_action":
      if (e.actionKind === "cancelAction") {
        const reason = e.action.action.case === "cancelAction" && e.action.action.value.reason;
        return endInterrupted(s, endFor({ kind: "canceled", message: reason ? `Canceled: ${reason}` : "Canceled by the client." }), s.phase === "model_call");
      }
      return { state: s, effects: [{ type: "log", level: "info", message: "conversation action not handled yet", fields: { action: e.actionKind } }] };
    case "unknown":
      if (s.unknownLogged) return { state: s, effects: [] };
      return {
        state: { ...s, unknownLogged: true },
        effects: [{ type: "log", level: "info", message: "client message with no known branch accepted", fields: { unknownFields: e.unknownFieldNumbers } }],
      };
    case "client_heartbeat":
      return { state: s, effects: [] };
    default:
      return { state: s, effects: [{ type: "log", level: "info", message: "client message branch not handled yet", fields: { kind: e.kind } }] };
  }
}

/** What a new owner restores after a takeover (see libs/agent snapshot). */
export interface RunResume {
  phase: Phase;
  run: RunStart | undefined;
  modelCalls: number;
  attempt: number;
  steps: TurnView["steps"];
  usage: Usage;
  current: Omit<AttemptTranslation, "thinkingSince" | "completed"> | undefined;
}

/** Rebuilds the state a previous owner had; time-bound fields (open thinking) restart closed. */
export function resumeRunState(requestId: string, generation: number, r: RunResume): RunState {
  return {
    ...initialRunState(requestId, generation),
    phase: r.phase,
    run: r.run,
    modelCalls: r.modelCalls,
    attempt: r.attempt,
    steps: r.steps,
    usage: r.usage,
    current: r.current ? { ...r.current, thinkingSince: undefined, completed: undefined } : undefined,
  };
}
