/**
 * The request bus: everything about a live request that must outlive any one process.
 *
 * Two implementations share this contract and one test suite (test/contract.ts):
 * `createMemoryBus()` for embedded mode and the Redis bus for distributed mode.
 *
 * Vocabulary
 * - request: a Cursor `request_id`, always looked up inside its tenant (RequestRef).
 * - generation: one run of a request. Cursor reuses request ids; once the latest generation
 *   has ended, an append with seqno 1 begins generation N+1 with its own input and output.
 * - input: the request's AgentClientMessages in append_seqno order, each delivered once.
 * - output: the AgentServerMessage frames of one generation, then one end entry.
 * - epoch: the fencing token of the worker that owns a generation; only the current
 *   epoch may append output.
 */

import type { TraceCarrier } from "@byok/telemetry";
import type { EntryMeta } from "./entry-meta.js";

export interface RequestRef {
  tenantId: string;
  requestId: string;
}

/** One client message accepted into a generation's input, in delivery order. */
export interface InputEntry {
  /** 0-based position in the generation's input. */
  index: number;
  /** The client's append_seqno (≤ 0 for appends that bypass ordering). */
  seqno: bigint;
  /** Serialized agent.v1.AgentClientMessage. */
  payload: Uint8Array;
  meta: EntryMeta;
}

export type AppendOutcome =
  /** Delivered in order (and any buffered successors with it). */
  | { status: "accepted"; generation: number; startedGeneration: boolean }
  /** Ahead of a gap: recorded durably, delivered once the gap fills. */
  | { status: "buffered"; generation: number }
  /** Already seen: no effect. */
  | { status: "duplicate"; generation: number }
  /** Too far ahead of the next expected seqno. Nothing was recorded. */
  | { status: "beyond_window"; generation: number; nextSeqno: bigint; window: number }
  /** The generation reached its input cap. Nothing was recorded. */
  | { status: "input_full"; generation: number; limit: number };

/** How a generation's output ended: `{}` (ok) or a Connect error with optional ErrorDetails bytes. */
export interface EndStatus {
  ok: boolean;
  code?: string;
  message?: string;
  /** Serialized aiserver.v1.ErrorDetails. */
  errorDetails?: Uint8Array;
}

export interface OutputEntry {
  /** 0-based position in the generation's output. */
  index: number;
  /** Serialized agent.v1.AgentServerMessage. */
  frame: Uint8Array;
  trace: TraceCarrier;
  /** When it was appended, ms since the epoch by the writer's clock (0 if unknown); for overhead metrics. */
  appendedAt: number;
}

/** The frames a wake-up carried: just appended to `generation`, in order, exactly as stored. */
export interface CarriedOutput {
  generation: number;
  entries: OutputEntry[];
}

export interface GenerationInfo {
  generation: number;
  ended: boolean;
}

/** What `claim` returns. */
export interface Claim {
  /** The new owner's fencing epoch. */
  epoch: number;
  /** The generation already ended (or a newer one exists): nothing is left to run. */
  ended: boolean;
  /** The run snapshot of a live generation, if an earlier owner saved one (a takeover); an empty one reads as none. */
  snapshot: Uint8Array | undefined;
}

export type OutputAppendResult =
  | { ok: true; nextIndex: number }
  /** The caller's epoch is not the current one: another worker owns the generation. */
  | { ok: false; reason: "fenced" }
  /** The output cap was reached; the caller must end the run `resource_exhausted`. */
  | { ok: false; reason: "cap"; limit: number }
  /** The generation has already ended. */
  | { ok: false; reason: "ended" };

export interface OutputRead {
  entries: OutputEntry[];
  /** Present once the generation has ended and every entry before it was returned. */
  end?: EndStatus;
}

/** Unsubscribe function. */
export type Unsubscribe = () => void;

export interface Bus {
  // ---- ingress: BidiAppend -------------------------------------------------------------

  /**
   * The append_seqno gate (docs/protocol.md), atomic per request: seqno == next is delivered,
   * larger is buffered (up to `window` ahead), smaller is a duplicate; seqno ≤ 0 is delivered
   * without ordering. When the latest generation has ended (or none exists), seqno 1 (or a
   * seqno ≤ 0 append) starts a new generation. Resolves once the outcome is durable.
   */
  appendInput(ref: RequestRef, seqno: bigint, payload: Uint8Array, meta: EntryMeta): Promise<AppendOutcome>;

  // ---- readers: RunSSE -----------------------------------------------------------------

  /** The latest generation of the request, if any. */
  latestGeneration(ref: RequestRef): Promise<GenerationInfo | undefined>;

  /**
   * Output entries of `generation` from `fromIndex`, at most `max`, and the end status
   * once every entry has been read.
   */
  readOutput(ref: RequestRef, generation: number, fromIndex: number, max: number): Promise<OutputRead>;

  /**
   * Calls `onChange` (coalesced, possibly spuriously) whenever the request's output, end or
   * generation may have changed. Readers re-read after each call, unless it carries exactly the
   * entries they would read next (`carried`: the Redis bus sends a lone appended frame along
   * with its wake-up, so a reader that is up to date needs no read for it).
   *
   * Every watch (this one, watchInput, watchReaders, watchConversation) also calls `onChange`
   * once when it is live — the Redis bus when its subscription is confirmed (at once when the
   * channel was subscribed already), the memory bus in a microtask — so a watcher that checks
   * in its call misses no change made after it registered, and needs no check of its own.
   */
  watch(ref: RequestRef, onChange: (carried?: CarriedOutput) => void): Unsubscribe;

  /**
   * Calls `onStart` (possibly spuriously) when a generation of the request may have started:
   * all a reader waiting for its request to appear needs (it reads latestGeneration after
   * registering, then on each call). Cheaper than watch() per request: the Redis bus serves
   * every such watch of a process over one shared channel (no SUBSCRIBE per request), and
   * wakes them all when that channel is (re)subscribed.
   */
  watchStart(ref: RequestRef, onStart: () => void): Unsubscribe;

  /**
   * Registers a live reader of the request, visible to every process (reconnect grace).
   * The returned function removes it. Readers of a crashed process expire after `ttlMs`.
   */
  addReader(ref: RequestRef, readerId: string, ttlMs: number): Promise<() => Promise<void>>;

  // ---- workers ---------------------------------------------------------------------------

  /**
   * Takes ownership of a generation: bumps its epoch (every earlier epoch is fenced from then
   * on) and, in the same atomic step, reads the run snapshot of a live generation (no earlier
   * owner can save a newer one after this). A run's start needs all three at once: the epoch,
   * whether the generation already ended (a stale dispatch) and the snapshot (a takeover).
   */
  claim(ref: RequestRef, generation: number): Promise<Claim>;

  /** Input entries of `generation` from `fromIndex`. */
  readInput(ref: RequestRef, generation: number, fromIndex: number): Promise<InputEntry[]>;

  /** Like watch(), for new input of the request. */
  watchInput(ref: RequestRef, onChange: () => void): Unsubscribe;

  /**
   * Appends frames atomically (all or none), fenced by epoch and capped. With `snapshot` (not
   * empty), the run snapshot is saved in the same atomic step, only if the frames were appended:
   * one fenced write per batch instead of two.
   */
  appendOutput(ref: RequestRef, generation: number, epoch: number, frames: Uint8Array[], trace: TraceCarrier, snapshot?: Uint8Array): Promise<OutputAppendResult>;

  /**
   * Ends the generation (fenced): stores the end status, marks the generation ended and
   * starts the retention TTL of its keys.
   */
  endOutput(ref: RequestRef, generation: number, epoch: number, end: EndStatus): Promise<OutputAppendResult>;

  /**
   * Number of live readers and, while there is none, when the last one left (ms epoch), for the
   * reconnect grace; `lastLeftAt` is undefined while readers are live (the Redis bus then skips
   * reading it).
   */
  readerPresence(ref: RequestRef): Promise<{ readers: number; lastLeftAt: number | undefined }>;

  /**
   * Calls `onChange` (coalesced, possibly spuriously) when the last live reader of the request
   * left, so its owner need not poll readerPresence. A reader of a crashed process that merely
   * expires sends nothing, and a wake-up can be lost in an outage: owners check when the watch
   * is live (its first call, see watch()) and still now and then.
   */
  watchReaders(ref: RequestRef, onChange: () => void): Unsubscribe;

  /**
   * Marks `runKey` as the conversation's current run (a new run_request supersedes older live
   * runs of its conversation, docs/protocol.md). The mark expires after `ttlMs` unless refreshed.
   */
  markConversationRun(tenantId: string, conversationId: string, runKey: string, ttlMs: number): Promise<void>;
  /** The conversation's current run, if any. */
  conversationRun(tenantId: string, conversationId: string): Promise<string | undefined>;

  /**
   * Calls `onChange` (coalesced, possibly spuriously) when a run marked itself the
   * conversation's current one or the conversation's shared prewarm was taken, so a run need
   * not poll conversationRun / hasPrewarm. Expiries send nothing; as with watchReaders,
   * watchers check when the watch is live and still now and then.
   */
  watchConversation(tenantId: string, conversationId: string, onChange: () => void): Unsubscribe;

  /**
   * Shares a prewarmed request's prepared state with the conversation for `ttlMs`, so a
   * run_request on another request id of that conversation can reuse it (docs/protocol.md "Stream behaviour").
   */
  savePrewarm(tenantId: string, conversationId: string, data: Uint8Array, ttlMs: number): Promise<void>;
  /** Takes (gets and deletes, atomically) the conversation's shared prewarm, if any. */
  takePrewarm(tenantId: string, conversationId: string): Promise<Uint8Array | undefined>;
  /** Whether the conversation's shared prewarm is still there (not taken, not expired). */
  hasPrewarm(tenantId: string, conversationId: string): Promise<boolean>;

  /** Run snapshot for takeover (opaque bytes), fenced by epoch on save. */
  saveSnapshot(ref: RequestRef, generation: number, epoch: number, snapshot: Uint8Array): Promise<boolean>;
  loadSnapshot(ref: RequestRef, generation: number): Promise<Uint8Array | undefined>;

  close(): Promise<void>;
}

/** Timers and limits every bus implementation honours. */
export interface BusOptions {
  seqnoWindow: number;
  maxOutputFrames: number;
  maxInputEntries: number;
  /** Retention of an ended generation's keys. */
  finishedRetentionMs: number;
  /** Idle sequence state is dropped after this. */
  sequenceStateTtlMs: number;
}

/**
 * Dispatches run generations to whoever executes them (the in-process engine in embedded
 * mode, BullMQ workers in distributed mode). Idempotent per (request, generation).
 */
export interface RunDispatcher {
  dispatch(ref: RequestRef, generation: number, trace: TraceCarrier): Promise<void>;
  /**
   * Whether a new run may be queued now: undefined when it may, else how many runs already
   * wait for a worker and the configured limit (the caller refuses the run at once).
   */
  admit(): Promise<RunRefusal | undefined>;
}

/** A new run refused because too many runs already wait for a worker. */
export interface RunRefusal {
  waiting: number;
  limit: number;
}
