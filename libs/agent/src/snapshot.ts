import type { RunStateSnapshot } from "@byok/protocol";
import type { HeldContent } from "@byok/store";
import type { AttemptResult } from "./metering.js";

/**
 * The durable part of a live run that the next owner needs after a takeover (docs/architecture.md
 * property 5), saved to the bus after every batch of events, fenced by epoch: the state
 * machine's snapshot plus the engine's cursors (and an ephemeral run's own history). The run
 * request itself is re-read from the input entry at `runRequestIndex`.
 */
export interface RunSnapshot {
  v: 2;
  /** Input entries whose events were processed. */
  inputIndex: number;
  /** Input entry holding the run_request (undefined before it arrived). */
  runRequestIndex: number | undefined;
  /** Output frames appended so far (the new owner never re-emits them). */
  outputFrames: number;
  /** Retries used in the current model call, per phase. */
  retries: { connect: number; stream: number };
  targetIndex: number;
  state: RunStateSnapshot;
  /**
   * Ephemeral runs (ghost mode, retention `metadata` / `none`): the history the run holds only
   * in memory, so a new owner rebuilds the same prompt. It lives here, in the bus (expiring
   * with the generation), and never in the store.
   */
  content?: HeldContent;
  /** The meter's ticket of the attempt in flight (its budget lease), settled by the next owner. */
  meterTicket?: unknown;
  /**
   * Attempts that ended (the run moved past them) before their ledger row and lease were
   * settled: the next owner settles them (idempotent per attempt), so a worker that dies
   * between a pass's end and its ledger write loses no usage.
   */
  unsettled?: UnsettledAttempt[];
}

/** An ended attempt waiting for its settlement, as the snapshot keeps it (JSON). */
export interface UnsettledAttempt {
  modelCallId: string;
  attempt: number;
  targetIndex: number;
  inputTokens: number;
  ticket: unknown;
  result: AttemptResult;
}

export function encodeSnapshot(s: RunSnapshot): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(s));
}

export function decodeSnapshot(bytes: Uint8Array | undefined): RunSnapshot | undefined {
  if (!bytes) return undefined;
  const s = JSON.parse(new TextDecoder().decode(bytes)) as RunSnapshot;
  return s.v === 2 ? s : undefined;
}
