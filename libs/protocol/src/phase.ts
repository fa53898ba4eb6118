import type { ClientEvent } from "./classify.js";
import type { Phase, RunEvent, RunState } from "./run-types.js";

/**
 * The run's phases as questions (libs/protocol/README.md draws them): the transitions and
 * the engine ask these instead of comparing phase names, and `enter` is the one way a
 * transition changes the phase.
 */
type Phased = { readonly phase: Phase };

/** Waiting for the run_request (or prewarmed, waiting for it). */
export const isAwaitingRun = (s: Phased): boolean => s.phase === "awaiting_run";
/** Importing a client-held conversation before the first pass. */
export const isImporting = (s: Phased): boolean => s.phase === "importing";
/** A model call (a provider pass) is in progress. */
export const isCallingModel = (s: Phased): boolean => s.phase === "model_call";
/** The pass's tool calls are out with the client. */
export const isRunningTools = (s: Phased): boolean => s.phase === "tools";
/** The end is decided and held behind the final checkpoint's blobs. */
export const isFinishing = (s: Phased): boolean => s.phase === "finishing";
export const isEnded = (s: Phased): boolean => s.phase === "ended";
/** A turn is under way (a pass or its tools): what a cancel, supersede or takeover interrupts. */
export const isInTurn = (s: Phased): boolean => isCallingModel(s) || isRunningTools(s);

/**
 * The pass in flight summarizes (a summarize action, or compaction before the real pass): its
 * text becomes the `summary` update and streams nothing to the chat.
 */
export const isSummarizing = (s: RunState): boolean => s.run?.kind === "summarize" || s.compacting !== undefined;

/** The one phase write of the machine. */
export function enter(s: RunState, phase: Phase): RunState {
  return s.phase === phase ? s : { ...s, phase };
}

/** What moved the machine: the event type, or the client message's kind for client events. */
export type TransitionCause = Exclude<RunEvent["type"], "client"> | ClientEvent["kind"];

/** A phase change of one step, for the engine to record (span event, debug log). */
export interface Transition {
  from: Phase;
  to: Phase;
  cause: TransitionCause;
}

export function causeOf(ev: RunEvent): TransitionCause {
  return ev.type === "client" ? ev.event.kind : ev.type;
}
