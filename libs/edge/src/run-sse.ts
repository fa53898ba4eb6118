import { randomUUID } from "node:crypto";
import type { Bus, CarriedOutput, GenerationInfo, OutputEntry, OutputRead, RequestRef } from "@byok/bus";
import { HEARTBEAT_FRAME, storedEndStream } from "@byok/protocol";
import { encodeEndStream } from "@byok/wire";
import { ConnectError } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { ATTR, extractTraceContext, SPAN, type GatewayMetrics, type Logger } from "@byok/telemetry";
import type { Principal } from "./auth.js";
import { loggableHeaders, type ClientHeaders } from "./client-headers.js";
import { invalidArgument, notFound, unavailable } from "./errors.js";
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
 * A reader of a request's output: its frames, then the end-stream envelope it returns. It takes
 * the client headers already read (not the request's Headers, which a waiting stream would hold).
 */
export type OutputReader = (principal: Principal, requestId: string, client: ClientHeaders, signal: AbortSignal) => AsyncGenerator<Uint8Array, Uint8Array>;

/**
 * RunSSE's reader (AgentService/Run's too): replays the latest generation's output from the
 * start (or after `x-gateway-resume-after` frames), then follows live until its end entry;
 * heartbeats after silence are generated here and never stored. A request that never appears
 * ends `not_found`. Yields the serialized AgentServerMessage frames exactly as stored (never
 * decoded here) and returns the stored end as its end-stream envelope (the stored ErrorDetails
 * bytes as they are); the edge's own errors are thrown as ConnectErrors for the end-stream.
 * The caller authenticated `principal`.
 */
export function createRunSseFrames(deps: RunSseDeps): OutputReader {
  return async function* runSse(principal, requestId, client, signal) {
    if (!requestId) throw invalidArgument("RunSSE needs a BidiRequestId with `request_id`.");
    if (Number.isNaN(client.resumeAfter)) throw invalidArgument("x-gateway-resume-after must be a non-negative integer.");
    const ref: RequestRef = { tenantId: principal.tenantId, requestId };
    const wake = new Wakeup();
    const unwatch = deps.bus.watch(ref, (carried) => wake.notify(carried));
    let leave: (() => Promise<void>) | undefined;
    let lastSent = Date.now();
    deps.metrics.runSseOpen.inc();
    // A stream has its own trace (it may outlive runs and reconnect); it links to the run it reads.
    const span = tracer.startSpan(SPAN.runSse, { kind: SpanKind.SERVER, attributes: { [ATTR.tenantId]: ref.tenantId, [ATTR.requestId]: requestId } });
    let linked = false;
    const openedAt = Date.now();
    // No child logger per stream: a waiting stream would hold it (and its bound level methods).
    if (deps.logger.isLevelEnabled("debug")) deps.logger.debug({ tenant: ref.tenantId, requestId, ...loggableHeaders(client) }, "RunSSE opened");
    let endCode = "ok";
    try {
      // 1. Wait for the request's run to appear (a RunSSE may come before its first BidiAppend).
      const deadline = Date.now() + deps.timers.notFoundWaitMs;
      let info: GenerationInfo | undefined;
      for (;;) {
        wake.clear();
        info = await guard(() => deps.bus.latestGeneration(ref));
        if (info) break;
        const remaining = deadline - Date.now();
        if (signal.aborted) break;
        if (remaining <= 0) {
          throw notFound(`No run for request ${requestId} appeared within ${deps.timers.notFoundWaitMs} ms.`);
        }
        if (!(await wake.wait(Math.min(remaining, deps.timers.heartbeatMs - (Date.now() - lastSent)), signal))) {
          if (Date.now() - lastSent >= deps.timers.heartbeatMs) {
            yield HEARTBEAT_FRAME;
            lastSent = Date.now();
          }
        }
      }
      if (!info) {
        // The client went away while waiting for the run to appear.
        endCode = "client_gone";
        return encodeEndStream();
      }
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
      let index = client.resumeAfter ?? 0;
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
        if (read.entries.length > 0) lastSent = Date.now();
        if (read.end) {
          if (read.end.ok) return encodeEndStream();
          endCode = read.end.code ?? "unknown";
          return storedEndStream(read.end.code, read.end.message, read.end.errorDetails);
        }
        // A full page may have more behind it; a shorter one read everything there was, and what
        // came after the read has woken `wake` already (it was cleared before the read).
        mustRead = full;
        if (full) continue;
        const quiet = Date.now() - lastSent;
        if (quiet >= deps.timers.heartbeatMs) {
          yield HEARTBEAT_FRAME;
          lastSent = Date.now();
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
      unwatch();
      deps.metrics.runSseOpen.dec();
      deps.metrics.runSseStreams.inc({ end_code: endCode });
      span.setAttribute(ATTR.endCode, endCode);
      if (endCode !== "ok" && endCode !== "client_gone") span.setStatus({ code: SpanStatusCode.ERROR, message: endCode });
      span.end();
      if (leave) await leave().catch((err: unknown) => deps.logger.warn({ tenant: ref.tenantId, requestId, err }, "could not remove reader"));
    }
  };
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
