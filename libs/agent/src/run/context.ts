import { ANONYMOUS_PRINCIPAL, type RequestRef, type RunPrincipal } from "@byok/bus";
import { initialRunState, type RunEvent, type RunPolicy, type RunStart, type RunState, type ProviderTarget } from "@byok/protocol";
import { isStoreError, type RunFence, type Store, type ContentMode, type RunContent } from "@byok/store";
import type { AgentServerMessage } from "@byok/wire";
import type { FencedWrite, Logger, TraceCarrier } from "@byok/telemetry";
import { EventQueue } from "../event-queue.js";
import { UNMETERED, type RunMeter } from "../metering.js";
import type { ClientTurns } from "../history.js";
import type { UnsettledAttempt } from "../snapshot.js";
import { RunTelemetry } from "./telemetry.js";
import type { RunEngineDeps } from "../ports.js";

/** A queued event, with the input entry it came from (for snapshots). */
export interface QueuedEvent {
  ev: RunEvent;
  inputIndex?: number;
}

/** The model call in flight: its abort handle and the token that tells its events are current. */
export interface LiveModelCall {
  controller: AbortController;
  token: number;
}

/**
 * Everything one generation's systems share (lifecycle, input, effects, model call, takeover,
 * watchdogs). Only the actor loop in generation-run.ts steps the state machine; every other
 * system talks to it by pushing events into `queue`.
 */
export class RunContext {
  state: RunState;
  readonly queue = new EventQueue<QueuedEvent>();
  readonly policy: RunPolicy;
  readonly meter: RunMeter;
  readonly log: Logger;
  readonly startedAt = Date.now();

  /** Fencing epoch of this owner (bus.claim). */
  epoch = 0;
  /** Set once another owner fenced this one out: stop without touching anything. */
  lost = false;
  /** An unexpected error of a task beside the loop (a model stream): ends the loop, rethrown. */
  crashed: { err: unknown } | undefined;
  principal: RunPrincipal = ANONYMOUS_PRINCIPAL;
  traceCarrier: TraceCarrier = {};
  /** Where this run writes content (history, blobs, conversation row): the store or its memory. */
  content: Store;
  /** Ephemeral runs: the content held only in memory (it travels in the takeover snapshot). */
  held: RunContent["held"];
  contentMode: ContentMode = "store";
  readonly telemetry: RunTelemetry;

  // Input cursors.
  /** Next input entry to read. */
  inputIndex = 0;
  /** Input entries whose events the state machine has processed (what a snapshot may claim). */
  processedInput = 0;
  runRequestIndex: number | undefined;
  /** A run_request entry was read (set before its shared prewarm is taken). */
  runRequestArrived = false;

  // Output.
  outputFrames = 0;
  /** Frames emitted since the last flush, in order (deltas merge at the flush). */
  pendingFrames: AgentServerMessage[] = [];
  /** The last appended frame was a model delta of the current pass: the next ones may be held. */
  deltaStreaming = false;

  // Model call.
  model: LiveModelCall | undefined;
  callToken = 0;
  targets: ProviderTarget[] = [];
  targetIndex = 0;
  /** Retries used so far in this model call, per phase. */
  retries = { connect: 0, stream: 0 };
  /**
   * The meter's ticket of the attempt in flight (plain data: its budget lease), saved in the
   * snapshot so a worker that takes the run over settles that lease.
   */
  meterTicket: unknown;
  /** The ticket the last snapshot built carried (a different one is saved at once: SnapshotSchedule). */
  snapshotMeterTicket: unknown;
  /** Ended attempts not settled yet, by `modelCallId:attempt` (in the snapshot: takeover.ts settles them). */
  unsettled = new Map<string, UnsettledAttempt>();

  /** This run marked itself its conversation's current run (`mark_conversation_run`; restored on takeover). */
  conversationMarked = false;
  /** Tells the watchdogs the run's conversation of interest may have changed (set by startWatchdogs). */
  conversationChanged: () => void = () => undefined;
  /** The client's turns (conversation_state), resolved on the run's first pass (client-turns.ts). */
  clientTurns: Promise<ClientTurns | undefined> | undefined;

  /** Waiting for the loop to have handled (and flushed) the first `through` queued events. */
  private flushWaiters: { through: number; resolve: () => void }[] = [];
  /** Queued events the loop has handled and whose frames it has flushed. */
  private flushedThrough = 0;

  private readonly timers: NodeJS.Timeout[] = [];
  private readonly releases: (() => void)[] = [];

  constructor(
    readonly deps: RunEngineDeps,
    readonly ref: RequestRef,
    readonly generation: number,
  ) {
    this.policy = { toolTimeoutMs: deps.timers.toolTimeoutMs, webSearch: deps.webSearch !== undefined };
    this.state = initialRunState(ref.requestId, generation, this.policy);
    this.meter = deps.meter ?? UNMETERED;
    this.content = deps.store;
    this.telemetry = new RunTelemetry(deps.metrics, ref.tenantId);
    this.log = deps.logger.child({ tenant: ref.tenantId, requestId: ref.requestId, generation });
  }

  push(ev: RunEvent): void {
    this.queue.push({ ev });
  }

  /** The one timer helper: `ev` is queued after `ms` unless the run ended first. */
  after(ms: number, ev: RunEvent): void {
    const t = setTimeout(() => this.push(ev), ms);
    t.unref();
    this.timers.push(t);
  }

  /** What this owner's store writes carry: a stale epoch is refused by the store itself. */
  get fence(): RunFence {
    return { requestId: this.ref.requestId, generation: this.generation, epoch: this.epoch };
  }

  /** Runs a task beside the actor loop; if it throws, the run crashes (never an unhandled rejection). */
  detach(task: Promise<void>): void {
    task.catch((err: unknown) => {
      if (isStoreError(err, "fenced")) return this.fencedOut("store");
      this.crashed ??= { err };
      this.model?.controller.abort();
      this.queue.close();
    });
  }

  /** Another owner took the generation: stop the model call and everything after it. */
  loseOwnership(fields: Record<string, unknown>): void {
    this.lost = true;
    this.model?.controller.abort();
    this.log.warn(fields, "lost ownership of the run");
  }

  /** A write of this owner was refused for its stale epoch (by the bus or the store): counted, then ownership is lost. */
  fencedOut(op: FencedWrite): void {
    if (this.lost) return; // counted once per lost run, by the write that found out
    this.telemetry.fenced(op);
    this.loseOwnership({ reason: "fenced", on: op });
  }

  /** Registers the run's client secrets (BYOK keys) for log scrubbing until the run ends. */
  registerSecrets(run: RunStart): void {
    const register = this.deps.registerSecret;
    if (!register) return;
    for (const s of secretsOf(run)) this.releases.push(register(s));
  }

  private modelBound = false;
  /** Once the run_request is known, every later log line of the run names its model. */
  bindModel(): void {
    if (this.modelBound || !this.state.run) return;
    this.modelBound = true;
    this.log.setBindings({ model: this.state.run.modelId });
  }

  /** The run's name in its conversation (a newer run_request there supersedes it). */
  get runKey(): string {
    return `${this.ref.requestId}/${this.generation}`;
  }

  /**
   * Resolves once every event queued so far has been handled by the loop and the frames it
   * emitted were appended (or the run stopped): what a model stream waits for before it
   * records its attempt, so the attempt's first frame is measured (gateway TTFT overhead).
   */
  framesOut(): Promise<void> {
    const through = this.queue.pushed;
    if (through <= this.flushedThrough) return Promise.resolve();
    return new Promise((resolve) => this.flushWaiters.push({ through, resolve }));
  }

  /** The loop flushed after handling every event it took so far. */
  flushed(): void {
    this.flushedThrough = this.queue.taken;
    const ready = this.flushWaiters.filter((w) => w.through <= this.flushedThrough);
    this.flushWaiters = this.flushWaiters.filter((w) => w.through > this.flushedThrough);
    for (const w of ready) w.resolve();
  }

  /** Releases what the run holds: the model call, timers, registered secrets, framesOut() waiters. */
  dispose(): void {
    for (const w of this.flushWaiters.splice(0)) w.resolve();
    this.model?.controller.abort();
    for (const t of this.timers) clearTimeout(t);
    for (const r of this.releases) r();
  }
}

function secretsOf(run: RunStart): string[] {
  const c = run.credentials;
  if (!c) return [];
  if (c.kind === "bedrock") return [c.accessKey, c.secretKey, ...(c.sessionToken ? [c.sessionToken] : [])];
  return [c.apiKey];
}
