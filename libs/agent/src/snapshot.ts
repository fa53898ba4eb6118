import type { EndDecision, RunState } from "@byok/protocol";
import type { ReasoningPart, ToolCallPart, Usage } from "@byok/providers";

/**
 * The durable part of a live run that the next owner needs after a takeover (ARCHITECTURE.md
 * property 5), saved to the bus after every batch of events, fenced by epoch. The run request
 * itself is not copied: it is re-read from the input entry at `runRequestIndex`.
 * Version 1; the agent-loop issue adds pending exec / interaction / KV bridges here.
 */
export interface RunSnapshot {
  v: 1;
  /** Input entries consumed so far. */
  inputIndex: number;
  /** Input entry holding the run_request (undefined before it arrived). */
  runRequestIndex: number | undefined;
  phase: RunState["phase"];
  modelCalls: number;
  attempt: number;
  steps: RunState["steps"];
  usage: Usage;
  /** The attempt in flight: what the client already saw of it. */
  current:
    | {
        modelCallId: string;
        text: string;
        thinkingText: string;
        thinkingMs: number;
        reasoning: ReasoningPart[];
        toolCalls: ToolCallPart[];
        outputStarted: boolean;
      }
    | undefined;
  /** Output frames appended so far (the new owner never re-emits them). */
  outputFrames: number;
  /** Retries used in the current model call, per phase. */
  retries: { connect: number; stream: number };
  targetIndex: number;
  /** Blob keys the client acknowledged (never resent). */
  knownBlobs: string[];
  /** The end the previous owner decided but held behind its final checkpoint. */
  heldEnd: EndDecision | undefined;
}

export function encodeSnapshot(s: RunSnapshot): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(s));
}

export function decodeSnapshot(bytes: Uint8Array | undefined): RunSnapshot | undefined {
  if (!bytes) return undefined;
  const s = JSON.parse(new TextDecoder().decode(bytes)) as RunSnapshot;
  return s.v === 1 ? s : undefined;
}
