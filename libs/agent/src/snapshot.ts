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

/**
 * The saved form (docs/architecture.md "Takeover state"): a format byte, the header's length
 * (u32, big-endian), the header (the snapshot as JSON, its steps replaced by their sizes), then
 * the steps' bytes back to back. The steps are the bulk of a long turn (tool results); as
 * base64 inside the JSON, every save base64-encoded, scanned and UTF-8-encoded all of them
 * again (docs/benchmarks.md "Steps serialized once, saved as bytes"). Snapshots of older workers are one JSON
 * text with base64 steps; they start with "{" and still decode.
 */
const STEPS_APART = 0x01;
const JSON_SNAPSHOT = 0x7b; // "{"
const HEADER_AT = 5;

type SnapshotHeader = Omit<RunSnapshot, "state"> & { state: Omit<RunStateSnapshot, "steps"> & { stepSizes: number[] } };

export function encodeSnapshot(s: RunSnapshot): Uint8Array {
  const { steps, ...state } = s.state;
  const header: SnapshotHeader = { ...s, state: { ...state, stepSizes: steps.map((b) => b.byteLength) } };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(HEADER_AT + json.byteLength + steps.reduce((n, b) => n + b.byteLength, 0));
  out[0] = STEPS_APART;
  new DataView(out.buffer).setUint32(1, json.byteLength);
  out.set(json, HEADER_AT);
  let at = HEADER_AT + json.byteLength;
  for (const b of steps) {
    out.set(b, at);
    at += b.byteLength;
  }
  return out;
}

/** The snapshot saved by `encodeSnapshot`, or by an older worker as JSON; undefined for none or an unknown version. */
export function decodeSnapshot(bytes: Uint8Array | undefined): RunSnapshot | undefined {
  if (!bytes || bytes.byteLength === 0) return undefined;
  if (bytes[0] === JSON_SNAPSHOT) {
    const old = JSON.parse(new TextDecoder().decode(bytes)) as Omit<RunSnapshot, "state"> & { state: Omit<RunStateSnapshot, "steps"> & { steps: string[] } };
    if (old.v !== 2) return undefined;
    return { ...old, state: { ...old.state, steps: old.state.steps.map((x) => new Uint8Array(Buffer.from(x, "base64"))) } };
  }
  if (bytes[0] !== STEPS_APART || bytes.byteLength < HEADER_AT) return undefined;
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(HEADER_AT, HEADER_AT + length))) as SnapshotHeader;
  if (header.v !== 2) return undefined;
  const { stepSizes, ...state } = header.state;
  let at = HEADER_AT + length;
  const steps = stepSizes.map((n) => bytes.subarray(at, (at += n)));
  if (at !== bytes.byteLength) throw new Error(`run snapshot: ${bytes.byteLength} bytes, its header accounts for ${at}`);
  return { ...header, state: { ...state, steps } };
}
