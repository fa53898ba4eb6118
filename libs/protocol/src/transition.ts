import type { EndDecision } from "./errors.js";
import { buildCheckpoint, type TurnView } from "./checkpoint.js";
import {
  endHeld, gateCheckpoint, gateEnd, gateFrames, type GateResult,
} from "./gate.js";
import { frames } from "./frames.js";
import { enter, isRunningTools } from "./phase.js";
import type { InterruptedPendingToolCallResolution } from "@byok/wire";
import { abortPendingExecs, interruptPendingCalls } from "./tool-loop.js";
import type { AttemptTranslation } from "./translate.js";
import type { Draft, Effect, Phase, RunState } from "./run-types.js";
import { startAttempt } from "./translate.js";

/**
 * The machinery every transition shares: drafts through the output gate, checkpoints of the
 * turn so far, the output of a cut attempt, ending an interrupted run.
 */
export function modelCallIdFor(generation: number, n: number): string {
  return `g${generation}m${n}`;
}

/** Context-window size passes and checkpoints assume when the route does not say. */
export const DEFAULT_CONTEXT_WINDOW = 200_000;

/** Routes drafts through the output gate and derives the phase (`finishing` while an end is held). */
export function gated(s: RunState, drafts: Draft[]): { state: RunState; effects: Effect[] } {
  let cur = s;
  const effects: Effect[] = [];
  // A checkpoint drafted with the run's end is the turn's final one: the one the store keeps.
  const final = drafts.some((d) => d.type === "end");
  const take = (r: GateResult) => {
    cur = { ...cur, gate: r.gate };
    effects.push(...r.effects);
  };
  for (const d of drafts) {
    if (d.type === "emit") take(gateFrames(cur.gate, d.frames));
    else if (d.type === "end") take(gateEnd(cur.gate, d.decision));
    else if (d.type === "checkpoint") {
      const cp = checkpointOf(cur, d.steps, d.pendingToolCalls ?? []);
      if (cp) {
        take(gateCheckpoint(cur.gate, cp.state, [...(d.baseBlobs ?? []), ...cp.blobs]));
        if (final && cur.run) effects.push({ type: "save_checkpoint", conversationId: cur.run.conversationId, state: cp.state });
      }
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
      cur = { ...enter(cur, "model_call"), modelCalls: n, attempt: 1, current: startAttempt(modelCallId) };
      effects.push({ type: "start_model_call", modelCallId, attempt: 1 });
    } else effects.push(d);
  }
  const ended = effects.some((e) => e.type === "end");
  const phase: Phase = ended ? "ended" : endHeld(cur.gate) ? "finishing" : cur.phase;
  return { state: enter(cur, phase), effects };
}

/** Runs a tool-loop step and gates its drafts. */
export function toolStep(r: { state: RunState; drafts: Draft[] }): { state: RunState; effects: Effect[] } {
  return gated(r.state, r.drafts);
}

/** Applies a gate result whose effects are final output (never gated again). */
export function fromGate(s: RunState, r: GateResult): { state: RunState; effects: Effect[] } {
  // Unchanged stays the same object: the engine saves no snapshot for a step that changed nothing.
  if (r.gate === s.gate && r.effects.length === 0) return { state: s, effects: [] };
  const ended = r.effects.some((e) => e.type === "end");
  const phase: Phase = ended ? "ended" : endHeld(r.gate) ? "finishing" : s.phase;
  return { state: enter({ ...s, gate: r.gate }, phase), effects: r.effects };
}

export function checkpointOf(s: RunState, steps: TurnView["steps"], pendingToolCalls: readonly string[] = []) {
  const run = s.run;
  if (!run) return undefined;
  const used = s.usage.inputTokens + s.usage.cacheReadTokens + s.usage.cacheWriteTokens + s.usage.outputTokens;
  // The route's window once a pass started on it; before that, what the client's state last said.
  const max = s.contextWindow ?? (run.conversationState?.tokenDetails?.maxTokens || DEFAULT_CONTEXT_WINDOW);
  return buildCheckpoint(
    run.conversationState,
    { requestId: s.requestId, userText: run.userText, messageId: run.messageId, mode: s.mode, steps },
    { used, max },
    pendingToolCalls,
    s.todos,
    s.summary,
    s.plan?.plan,
  );
}

/** Steps and history of the current attempt's output so far. */
export function attemptOutput(t: AttemptTranslation, attempt: number): { steps: TurnView["steps"]; assistant: Record<string, unknown> | undefined } {
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
 * Ends a run interrupted mid-call or mid-tools: keeps the partial output (history, and a final
 * checkpoint when a client is there to receive it), answers every tool call still pending
 * (`interruptedBy` says why it has no result, unless the client's `resolutions` give one),
 * then ends with `decision`.
 */
export function endInterrupted(
  s: RunState,
  decision: EndDecision,
  opts: { abort: boolean; checkpoint: boolean; interruptedBy: string; resolutions?: readonly InterruptedPendingToolCallResolution[] },
): { state: RunState; effects: Effect[] } {
  const drafts: Draft[] = [];
  if (opts.abort) drafts.push({ type: "abort_model_call" });
  let steps = s.steps;
  if (isRunningTools(s)) {
    // Pending client executions are aborted (docs/protocol.md "Ending a stream") and answered in history.
    drafts.push(...abortPendingExecs(s));
    const r = interruptPendingCalls(s, opts.interruptedBy, opts.resolutions ?? []);
    steps = [...steps, ...r.steps];
    if (r.entries.length) drafts.push({ type: "record_history", entries: r.entries });
  }
  if (s.current) {
    const out = attemptOutput(s.current, s.attempt);
    steps = [...steps, ...out.steps];
    if (out.assistant) drafts.push({ type: "record_history", entries: [{ kind: "assistant", body: out.assistant, interrupted: true }] });
  }
  if (opts.checkpoint) drafts.push({ type: "checkpoint", steps });
  drafts.push({ type: "end", decision });
  return gated({ ...s, steps, current: undefined, tools: undefined }, drafts);
}

export function ignored(s: RunState, kind: string): { state: RunState; effects: Effect[] } {
  return { state: s, effects: [{ type: "log", level: "info", message: "client message with nothing waiting for it ignored", fields: { kind } }] };
}
