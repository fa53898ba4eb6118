import { randomUUID } from "node:crypto";
import type { Bus, CarriedOutput, GenerationInfo, OutputEntry, OutputRead, RequestRef } from "@byok/bus";
import { HEARTBEAT_FRAME, storedEndStream } from "@byok/protocol";
import { encodeEndStream } from "@byok/wire";
import { ConnectError } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import { ATTR, extractTraceContext, SPAN, type GatewayMetrics, type Logger } from "@byok/telemetry";
import type { Principal } from "./auth.js";
import { loggableHeaders, type ClientHeaders } from "./client-headers.js";
import { invalidArgument, notFound, unavailable } from "./errors.js";
import { Deadlines, type Due } from "./deadlines.js";
import { Wakeup } from "./wakeup.js";

export interface RunSseDeps {
  bus: Bus;
  timers: { heartbeatMs: number; notFoundWaitMs: number; newGenerationWaitMs: number; readerTtlMs: number };
  /** GATEWAY_READ_BATCH_BYTES: about how many bytes of frames one batch read from the bus holds. */
  limits: { readBatchBytes: number };
  logger: Logger;
  metrics: GatewayMetrics;
}

const tracer = trace.getTracer("@byok/ingress");

/**
 * Frames read from the bus per round trip: at most READ_BATCH, starting at FIRST_READ_BATCH and
 * doubling while batches are small, and cut so one batch holds about `batchBytes`
 * (GATEWAY_READ_BATCH_BYTES, default 4 MiB) of the largest frame seen. A reader that stops
 * reading (a slow client) parks the stream with one batch in memory, so this bounds what it
 * holds whatever the frame sizes (1 MiB frames, 4 MiB: ≤ 4).
 */
const READ_BATCH = 256;
const FIRST_READ_BATCH = 4;

/** The next batch size after a batch of `entries` frames whose largest so far is `largest` bytes. */
function nextReadBatch(current: number, entries: number, largest: number, batchBytes: number): number {
  const grown = entries >= current ? Math.min(READ_BATCH, current * 2) : current;
  return Math.max(1, Math.min(grown, Math.floor(batchBytes / Math.max(1, largest))));
}

/**
 * What a reader's consumer (RunSSE's response, Run's) gives it: where heartbeats go while the
 * stream waits for its run, and where its frames go from then on.
 */
export interface OutputConsumer {
  /** A heartbeat while the stream waits for its run to appear (skipped by the consumer while its last write is still buffered). */
  heartbeat(frame: Uint8Array): void;
  /**
   * Called once, when the run appeared or the wait ended: the frames from here on, then the
   * end-stream envelope they return (they end at once when the wait did: not_found,
   * client_gone, unavailable), and the signal that fires when the reading is aborted.
   */
  follow(frames: AsyncGenerator<Uint8Array, Uint8Array>, signal: AbortSignal): void;
}

/** A reading in progress: abort() when the client went away or the stream is cut. */
export interface OutputReading {
  abort(): void;
}

/**
 * A reader of a request's output. It takes the client headers already read (not the
 * request's Headers, which a waiting stream would hold).
 */
export type OutputReader = (principal: Principal, requestId: string, client: ClientHeaders, consumer: OutputConsumer) => OutputReading;

/**
 * RunSSE's reader (AgentService/Run's too): replays the latest generation's output from the
 * start (or after `x-gateway-resume-after` frames), then follows live until its end entry;
 * heartbeats after silence are generated here and never stored. A request that never appears
 * ends `not_found`. Yields the serialized AgentServerMessage frames exactly as stored (never
 * decoded here) and returns the stored end as its end-stream envelope (the stored ErrorDetails
 * bytes as they are); the edge's own errors are thrown as ConnectErrors for the end-stream.
 * The caller authenticated `principal`.
 *
 * Until its run appears a stream is a record (RunSseStream) woken by its bus watch, its
 * deadlines (heartbeat, not_found) in the process's one Deadlines heap: no async generator,
 * promise chain, AbortController or timer per waiting stream (docs/architecture.md, "Idle
 * RunSSE streams"). The generator starts when the run appears.
 */
export function createRunSseFrames(deps: RunSseDeps): OutputReader {
  const shared = { deps, deadlines: new Deadlines() };
  return (principal, requestId, client, consumer) => {
    const invalid = !requestId
      ? invalidArgument("RunSSE needs a BidiRequestId with `request_id`.")
      : Number.isNaN(client.resumeAfter)
        ? invalidArgument("x-gateway-resume-after must be a non-negative integer.")
        : undefined;
    if (invalid) {
      const refused = new AbortController();
      consumer.follow(failed(invalid), refused.signal);
      return refused;
    }
    return new RunSseStream(shared, { tenantId: principal.tenantId, requestId }, client, consumer);
  };
}

// The waiting states of a RunSseStream.
const WAITING = 0; // scheduled in the deadlines heap, woken by the watch
const CHECKING = 1; // reading the latest generation
const CHECKING_WOKEN = 2; // woken while reading: read again
const FOLLOWING = 3; // the generator (follow) runs the stream

/** One RunSSE stream: a small record while it waits for its run, then the generator that follows it. */
class RunSseStream implements Due, OutputReading {
  due = 0;
  slot = -1;
  private state = CHECKING;
  private aborted = false;
  private lastSent = Date.now();
  private readonly openedAt = this.lastSent;
  private readonly deadline: number;
  private readonly resumeAfter: number | undefined;
  private readonly span: Span;
  /** The watch: the request's start while waiting (no per-request subscription), its output once following. */
  private unwatch: () => void;
  /** Set once following: the watch's wake-ups and the signal that stops the generator. */
  private wake: Wakeup | undefined;
  private controller: AbortController | undefined;
  private consumer: OutputConsumer | undefined;

  constructor(
    private readonly shared: { deps: RunSseDeps; deadlines: Deadlines },
    private readonly ref: RequestRef,
    client: ClientHeaders,
    consumer: OutputConsumer,
  ) {
    const { deps } = shared;
    this.consumer = consumer;
    // Only what follows needs of the client headers (the header strings are not held).
    this.resumeAfter = client.resumeAfter;
    this.deadline = this.openedAt + deps.timers.notFoundWaitMs;
    this.unwatch = deps.bus.watchStart(ref, () => this.notify());
    deps.metrics.runSseOpen.inc();
    // A stream has its own trace (it may outlive runs and reconnect); it links to the run it reads.
    this.span = tracer.startSpan(SPAN.runSse, { kind: SpanKind.SERVER, attributes: { [ATTR.tenantId]: ref.tenantId, [ATTR.requestId]: ref.requestId } });
    // No child logger per stream: a waiting stream would hold it (and its bound level methods).
    if (deps.logger.isLevelEnabled("debug")) deps.logger.debug({ tenant: ref.tenantId, requestId: ref.requestId, ...loggableHeaders(client) }, "RunSSE opened");
    // 1. Wait for the request's run to appear (a RunSSE may come before its first BidiAppend).
    this.check();
  }

  abort(): void {
    if (this.controller) return this.controller.abort();
    if (this.aborted) return;
    this.aborted = true;
    // While reading, the read's answer decides (a run that appeared is still followed, as before).
    if (this.state === WAITING) {
      this.shared.deadlines.cancel(this);
      this.follow(undefined);
    }
  }

  private notify(carried?: CarriedOutput): void {
    if (this.wake) return this.wake.notify(carried);
    if (this.state === CHECKING) this.state = CHECKING_WOKEN;
    else if (this.state === WAITING) {
      this.shared.deadlines.cancel(this);
      this.check();
    }
  }

  /** The wait timed out: a heartbeat after silence, then read again (not_found once the deadline passed). */
  expire(): void {
    if (this.state !== WAITING) return;
    if (Date.now() - this.lastSent >= this.shared.deps.timers.heartbeatMs) {
      this.consumer?.heartbeat(HEARTBEAT_FRAME);
      this.lastSent = Date.now();
    }
    this.check();
  }

  private check(): void {
    this.state = CHECKING;
    guard(() => this.shared.deps.bus.latestGeneration(this.ref)).then(
      (info) => this.checked(info),
      (err: unknown) => {
        if (this.state !== FOLLOWING) this.follow(err instanceof Error ? err : new Error(String(err)));
      },
    );
  }

  private checked(info: GenerationInfo | undefined): void {
    if (this.state === FOLLOWING) return;
    if (info) return this.follow(info);
    // The client went away while waiting for the run to appear.
    if (this.aborted) return this.follow(undefined);
    const { timers } = this.shared.deps;
    const now = Date.now();
    if (now >= this.deadline) return this.follow(notFound(`No run for request ${this.ref.requestId} appeared within ${timers.notFoundWaitMs} ms.`));
    // A wake-up during the read is not lost: read again.
    if (this.state === CHECKING_WOKEN) return this.check();
    this.state = WAITING;
    this.shared.deadlines.schedule(this, Math.min(this.deadline, this.lastSent + timers.heartbeatMs));
  }

  /** The wait is over: the run (`info`), the error the stream ends with, or undefined when the client went away. */
  private follow(outcome: GenerationInfo | Error | undefined): void {
    this.state = FOLLOWING;
    this.wake = new Wakeup();
    this.unwatch();
    // The output's watch only once the run exists (phase 2 needs it too: a new generation
    // wakes it). A wake-up between the read that found the run and this subscription is not
    // lost: the first read comes after it, and the bus wakes a watch when its subscription is
    // confirmed.
    this.unwatch = outcome && !(outcome instanceof Error) ? this.shared.deps.bus.watch(this.ref, (carried) => this.notify(carried)) : () => undefined;
    this.controller = new AbortController();
    if (this.aborted) this.controller.abort();
    const consumer = this.consumer!;
    this.consumer = undefined;
    consumer.follow(this.frames(outcome, this.controller.signal), this.controller.signal);
  }

  private async *frames(outcome: GenerationInfo | Error | undefined, signal: AbortSignal): AsyncGenerator<Uint8Array, Uint8Array> {
    const { deps } = this.shared;
    const { ref, span, openedAt } = this;
    const requestId = ref.requestId;
    const wake = this.wake!;
    let leave: (() => Promise<void>) | undefined;
    let linked = false;
    let endCode = "ok";
    try {
      if (outcome instanceof Error) throw outcome;
      if (!outcome) {
        endCode = "client_gone";
        return encodeEndStream();
      }
      let info = outcome;
      // 2. The latest generation ended: a reused request id may be about to start a new one.
      if (info.ended) {
        const until = Date.now() + deps.timers.newGenerationWaitMs;
        while (Date.now() < until && !signal.aborted) {
          wake.clear();
          const next = await guard(() => deps.bus.latestGeneration(ref));
          // Its retention passed while this stream waited: nothing of it is left to replay.
          if (!next) throw expired(requestId);
          if (next.generation !== info.generation) {
            info = next;
            break;
          }
          await wake.wait(until - Date.now(), signal);
        }
      }
      const generation = info.generation;
      span.setAttribute(ATTR.generation, generation);
      leave = await guard(() => deps.bus.addReader(ref, randomUUID(), deps.timers.readerTtlMs));

      // 3. Replay, then follow live.
      let index = this.resumeAfter ?? 0;
      let batch = FIRST_READ_BATCH;
      let largest = 0;
      // Read at first and after a full page; otherwise only when the wake-ups since did not
      // carry exactly the frames that come next.
      let mustRead = true;
      while (!signal.aborted) {
        const next = mustRead ? undefined : carriedFrom(wake.take(), generation, index);
        if (mustRead) wake.clear();
        let read: OutputRead = { entries: next ?? [] };
        let full = false;
        if (!next) {
          const max = batch;
          read = await guard(() => deps.bus.readOutput(ref, generation, index, max));
          full = read.entries.length >= max;
        }
        for (const e of read.entries) if (e.frame.byteLength > largest) largest = e.frame.byteLength;
        if (!next) batch = nextReadBatch(batch, read.entries.length, largest, deps.limits.readBatchBytes);
        for (const e of read.entries) {
          index = e.index + 1;
          if (!linked) {
            linked = true;
            const run = trace.getSpanContext(extractTraceContext(e.trace));
            if (run) span.addLink({ context: run });
          }
          yield e.frame;
          deps.metrics.framesDelivered.inc();
          // Live frames only: a replay's age is the reconnect's, not the gateway's.
          if (e.appendedAt >= openedAt) deps.metrics.overhead.observe({ stage: "bus_to_client" }, Math.max(0, Date.now() - e.appendedAt) / 1000);
        }
        if (read.entries.length > 0) this.lastSent = Date.now();
        if (read.end) {
          if (read.end.ok) return encodeEndStream();
          endCode = read.end.code ?? "unknown";
          return storedEndStream(read.end.code, read.end.message, read.end.errorDetails);
        }
        // A full page may have more behind it; a shorter one read everything there was, and what
        // came after the read has woken `wake` already (it was cleared before the read).
        mustRead = full;
        if (full) continue;
        const quiet = Date.now() - this.lastSent;
        if (quiet >= deps.timers.heartbeatMs) {
          yield HEARTBEAT_FRAME;
          this.lastSent = Date.now();
          // A generation whose retention passed while this stream followed it (an ended one
          // read just before it expired) has no end left to read: without this check the stream
          // would send heartbeats for ever.
          if (!(await guard(() => deps.bus.latestGeneration(ref)))) throw expired(requestId);
          // A read per heartbeat even without wake-ups: a bus that went away (no wake-up says
          // so) ends the stream `unavailable` instead of leaving it waiting.
          mustRead = true;
          continue;
        }
        await wake.wait(deps.timers.heartbeatMs - quiet, signal);
      }
      endCode = "client_gone";
      return encodeEndStream();
    } catch (err) {
      // The Connect code's name (`not_found`, `unavailable` …), as stored ends name theirs.
      if (endCode === "ok") endCode = signal.aborted ? "client_gone" : err instanceof ConnectError ? codeToString(err.code) : "internal";
      throw err;
    } finally {
      this.unwatch();
      deps.metrics.runSseOpen.dec();
      deps.metrics.runSseStreams.inc({ end_code: endCode });
      span.setAttribute(ATTR.endCode, endCode);
      if (endCode !== "ok" && endCode !== "client_gone") span.setStatus({ code: SpanStatusCode.ERROR, message: endCode });
      span.end();
      if (leave) await leave().catch((err: unknown) => deps.logger.warn({ tenant: ref.tenantId, requestId, err }, "could not remove reader"));
    }
  }
}

/** A reading refused before it began (its request is invalid): it ends with `err`. */
async function* failed(err: Error): AsyncGenerator<Uint8Array, Uint8Array> {
  throw err;
}

/**
 * The frames the wake-ups carried that come next for a reader of `generation` at `index`
 * (already read ones dropped): [] when none did, undefined when a read is needed (a wake-up
 * without its frames, or a gap).
 */
function carriedFrom(carried: CarriedOutput[] | undefined, generation: number, index: number): OutputEntry[] | undefined {
  if (!carried) return undefined;
  const out: OutputEntry[] = [];
  let expected = index;
  for (const c of carried) {
    if (c.generation !== generation) continue;
    for (const e of c.entries) {
      if (e.index < expected) continue;
      if (e.index !== expected) return undefined;
      out.push(e);
      expected++;
    }
  }
  return out;
}

/** The generation this stream read expired (GATEWAY_FINISHED_RETENTION_MS after its end). */
function expired(requestId: string): ConnectError {
  return notFound(`The output of request ${requestId} expired (it ended longer ago than the gateway keeps finished runs, GATEWAY_FINISHED_RETENTION_MS).`);
}

/** Bus failures become `unavailable` with a message a person can act on. */
async function guard<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw Object.assign(unavailable("The gateway's message bus is unavailable; the client may reconnect to resume the stream."), { cause: err });
  }
}
