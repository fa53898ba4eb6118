import { trace, SpanKind, SpanStatusCode, context as otelContext } from "@opentelemetry/api";
import { ANONYMOUS_PRINCIPAL, type RequestRef } from "@byok/bus";
import { isStoreError, contentStore } from "@byok/store";
import { isEnded, step, type RunEvent } from "@byok/protocol";
import { ATTR, extractTraceContext, injectTraceContext, SPAN, type TraceCarrier } from "@byok/telemetry";
import type { RunEngineDeps } from "../ports.js";
import { RunContext, type QueuedEvent } from "./context.js";
import { decodeSnapshot } from "../snapshot.js";
import { executeAll, flush, mayHoldDeltas } from "./effects.js";
import { InputPump } from "./input.js";
import { saveSnapshot, SnapshotSchedule } from "./snapshots.js";
import { restore } from "./takeover.js";
import { startWatchdogs } from "./watchdogs.js";

const tracer = trace.getTracer("@byok/agent");

/**
 * One generation's run, lifecycle only: claim, restore or admit, start the input pump and the
 * watchdogs, run the actor loop (the one place that steps the state machine), release.
 */
export class GenerationRun {
  private readonly ctx: RunContext;
  private readonly input: InputPump;
  private readonly snapshots: SnapshotSchedule;

  constructor(
    deps: RunEngineDeps,
    private readonly ref: RequestRef,
    private readonly generation: number,
    private readonly signal: AbortSignal | undefined,
    private readonly jobTrace: TraceCarrier | undefined,
  ) {
    this.ctx = new RunContext(deps, ref, generation);
    this.input = new InputPump(this.ctx);
    this.snapshots = new SnapshotSchedule(this.ctx);
  }

  async run(): Promise<void> {
    const ctx = this.ctx;
    const { bus } = ctx.deps;
    // The input so far and the claim (with the snapshot and whether the generation ended) are
    // independent: one round trip for both.
    const [entries, claim] = await Promise.all([bus.readInput(this.ref, this.generation, 0), bus.claim(this.ref, this.generation)]);
    const first = entries[0];
    const parent = first ? extractTraceContext(first.meta.trace) : otelContext.active();
    // Child of the bus entry that started the generation, linked to the job that dispatched it.
    const job = trace.getSpanContext(extractTraceContext(this.jobTrace));
    const span = tracer.startSpan(
      SPAN.run,
      {
        kind: SpanKind.CONSUMER,
        attributes: { [ATTR.tenantId]: this.ref.tenantId, [ATTR.requestId]: this.ref.requestId, [ATTR.generation]: this.generation },
        ...(job ? { links: [{ context: job }] } : {}),
      },
      parent,
    );
    try {
      await otelContext.with(trace.setSpan(parent, span), async () => {
        ctx.traceCarrier = injectTraceContext();
        if (claim.ended) return; // a stale dispatch of an ended run
        ctx.epoch = claim.epoch;
        ctx.principal = first?.meta.principal ?? ANONYMOUS_PRINCIPAL;
        // The store learns the new epoch before this owner writes anything: from now on the
        // database refuses history, checkpoint and ledger writes of every earlier owner. The
        // tenant's content mode is looked up meanwhile.
        const [claimed, mode] = await Promise.all([
          ctx.deps.store.claimRun(this.ref.tenantId, ctx.fence),
          ctx.deps.content?.modeFor(this.ref.tenantId, ctx.principal),
        ]);
        if (!claimed) {
          ctx.fencedOut("claim");
          return;
        }
        if (ctx.deps.content && mode !== undefined) {
          ctx.contentMode = mode;
          const content = contentStore(ctx.deps.store, mode);
          ctx.content = content.store;
          ctx.held = content.held;
        }
        const takeover = await restore(ctx, decodeSnapshot(claim.snapshot), entries);
        span.setAttribute(ATTR.takeover, takeover);
        // A new run: rate limits apply to run starts (not to every append or takeover). Checked
        // while the input read above is queued (its run_request takes the shared prewarm); a
        // refusal is queued before it.
        const admission = takeover ? Promise.resolve([]) : this.admit();
        await this.input.pump({ entries, beside: admission });
        // A failed read (Redis briefly unavailable) must not become an unhandled rejection that
        // kills the worker process: the next wake-up (every reconnect wakes all listeners) reads again.
        const catchUp = () => {
          this.input.pump().catch((err: unknown) => ctx.log.warn({ err }, "reading new input failed; the next wake-up retries"));
        };
        // Its first call (once live) reads what was appended since the first read, beside the loop.
        const stopInput = bus.watchInput(this.ref, catchUp);
        const stopWatchdogs = startWatchdogs(ctx);
        const onAbort = () => ctx.queue.close();
        this.signal?.addEventListener("abort", onAbort);
        ctx.telemetry.started(takeover, span);
        try {
          await this.loop().catch((err: unknown) => {
            // A store write refused for a stale epoch: another worker owns the run now.
            if (!isStoreError(err, "fenced")) throw err;
            ctx.fencedOut("store");
          });
          // Thrown to the dispatcher (embedded: ends the generation `internal`) or to BullMQ
          // (distributed: the job fails and is retried as a takeover).
          if (ctx.crashed) throw ctx.crashed.err;
        } finally {
          stopInput();
          stopWatchdogs();
          this.signal?.removeEventListener("abort", onAbort);
          ctx.telemetry.stopped();
          ctx.dispose();
        }
      });
      span.setStatus({ code: SpanStatusCode.OK });
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  }

  /** A new run's admission (rate limits); a refusal becomes the run's first event. */
  private async admit(): Promise<QueuedEvent[]> {
    const ctx = this.ctx;
    const admitted = await ctx.meter.admitRun(this.ref, ctx.principal);
    if (admitted.ok) return [];
    ctx.telemetry.refused(admitted.error);
    return [{ ev: { type: "run_refused", error: admitted.error } }];
  }

  /**
   * The actor loop: takes every queued event, steps the machine, runs its effects, flushes,
   * snapshots. Deltas after a pass's first one may wait up to the coalescing window for more
   * (one frame, one append); any other frame flushes at once.
   */
  private async loop(): Promise<void> {
    const ctx = this.ctx;
    const windowMs = ctx.deps.timers.deltaCoalesceMs ?? 0;
    let flushBy: number | undefined;
    let passProgressOnly = true;
    while (!isEnded(ctx.state) && !ctx.lost && !ctx.crashed) {
      const events = await ctx.queue.take(flushBy === undefined ? undefined : Math.max(0, flushBy - Date.now()));
      if (events?.length === 0) return; // closed (worker shutdown): the next owner takes over
      for (const { ev, inputIndex } of events ?? []) {
        if (isEnded(ctx.state) || ctx.lost) break;
        if (inputIndex !== undefined) ctx.processedInput = inputIndex + 1;
        const r = step(ctx.state, ev);
        // A step that changed nothing (a stale timer, say) needs no snapshot either.
        if (!isPassProgress(ev) && (r.state !== ctx.state || r.effects.length > 0)) passProgressOnly = false;
        ctx.state = r.state;
        if (r.transition) {
          ctx.telemetry.transition(r.transition);
          ctx.log.debug(r.transition, "run phase changed");
        }
        await executeAll(ctx, r.effects);
        ctx.telemetry.stepped(ctx.state);
        ctx.bindModel();
      }
      if (events !== undefined && !isEnded(ctx.state) && mayHoldDeltas(ctx) && (flushBy ??= Date.now() + windowMs) > Date.now()) continue;
      flushBy = undefined;
      const snapshot = !isEnded(ctx.state) && !ctx.lost && this.snapshots.due(passProgressOnly);
      // A due snapshot rides in the batch's append; on its own only when no frame is pending and
      // no next batch is queued to carry it (SnapshotSchedule.postpone).
      const carried = await flush(ctx, snapshot);
      ctx.flushed();
      if (snapshot && !carried && !isEnded(ctx.state) && !ctx.lost && !this.snapshots.postpone(ctx.queue.size > 0)) await saveSnapshot(ctx);
      passProgressOnly = true;
    }
  }
}

/**
 * A model event that only advances the pass in flight (streamed text, thinking and tool
 * arguments, an output item opening, a text item closing): what the output stream records, and
 * what a takeover re-runs the pass for anyway. `completed` is not (the run moves past the
 * attempt, and its settlement waits in the snapshot), nor is a finished tool call or reasoning
 * item: the cut attempt's interrupted history entry keeps them, and the stream does not.
 */
function isPassProgress(ev: RunEvent): boolean {
  if (ev.type !== "model") return false;
  const e = ev.event;
  return e.type !== "completed" && !(e.type === "item_done" && e.item.kind !== "text");
}
