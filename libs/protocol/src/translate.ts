import type { AgentServerMessage } from "@byok/wire";
import type { ProviderEvent, ReasoningPart, ToolCallPart, Usage } from "./model/index.js";
import { frames } from "./frames.js";

/**
 * Translation of one model-call attempt: normalized provider events → AgentServerMessage frames,
 * plus what the attempt produced (for history and checkpoints). Pure: time comes in as `nowMs`.
 */
export interface AttemptTranslation {
  readonly modelCallId: string;
  /** When the open thinking block started (ms), if one is open. */
  readonly thinkingSince: number | undefined;
  /** Total thinking time of the attempt, for the checkpoint's thinking step. */
  readonly thinkingMs: number;
  readonly text: string;
  readonly thinkingText: string;
  readonly reasoning: readonly ReasoningPart[];
  readonly toolCalls: readonly ToolCallPart[];
  /** True once any frame of this attempt was produced (a retry after this must tell the user). */
  readonly outputStarted: boolean;
  readonly completed: { usage: Usage; endTurn: boolean } | undefined;
}

export function startAttempt(modelCallId: string): AttemptTranslation {
  return {
    modelCallId, thinkingSince: undefined, thinkingMs: 0, text: "", thinkingText: "",
    reasoning: [], toolCalls: [], outputStarted: false, completed: undefined,
  };
}

function closeThinking(t: AttemptTranslation, nowMs: number, out: AgentServerMessage[]): AttemptTranslation {
  if (t.thinkingSince === undefined) return t;
  const d = nowMs - t.thinkingSince;
  out.push(frames.thinkingCompleted(d));
  return { ...t, thinkingSince: undefined, thinkingMs: t.thinkingMs + d };
}

export function translateEvent(
  t: AttemptTranslation,
  ev: ProviderEvent,
  nowMs: number,
): { t: AttemptTranslation; frames: AgentServerMessage[] } {
  const out: AgentServerMessage[] = [];
  let next = t;
  switch (ev.type) {
    case "item_added":
      if (ev.kind === "reasoning" && next.thinkingSince === undefined) next = { ...next, thinkingSince: nowMs };
      else if (ev.kind !== "reasoning") next = closeThinking(next, nowMs, out);
      break;
    case "reasoning_delta":
      if (next.thinkingSince === undefined) next = { ...next, thinkingSince: nowMs };
      if (ev.text) {
        out.push(frames.thinkingDelta(ev.text));
        next = { ...next, thinkingText: next.thinkingText + ev.text };
      }
      break;
    case "text_delta":
      next = closeThinking(next, nowMs, out);
      if (ev.text) {
        out.push(frames.textDelta(ev.text));
        next = { ...next, text: next.text + ev.text };
      }
      break;
    case "tool_call_delta":
      next = closeThinking(next, nowMs, out);
      if (ev.argsDelta) out.push(frames.partialToolCall(ev.itemId, next.modelCallId, ev.argsDelta));
      break;
    case "item_done":
      if (ev.item.kind === "reasoning") {
        next = closeThinking(next, nowMs, out);
        next = { ...next, reasoning: [...next.reasoning, ev.item.part] };
      } else if (ev.item.kind === "tool_call") {
        next = { ...next, toolCalls: [...next.toolCalls, ev.item.call] };
      }
      break;
    case "completed":
      next = closeThinking(next, nowMs, out);
      next = { ...next, completed: { usage: ev.usage, endTurn: ev.endTurn } };
      break;
  }
  if (out.length > 0 && !next.outputStarted) next = { ...next, outputStarted: true };
  return { t: next, frames: out };
}
