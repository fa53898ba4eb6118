import { fromBinary } from "@bufbuild/protobuf";
import type { InputEntry } from "@byok/bus";
import { classifyClientMessage, decodeClientMessage, isAwaitingRun, type ClientEvent } from "@byok/protocol";
import { PrewarmRequestSchema } from "@byok/wire";
import type { QueuedEvent, RunContext } from "./context.js";

/** Entries the caller already read (the run's first read), and what runs meanwhile (its admission). */
interface SeededRead {
  entries: readonly InputEntry[];
  beside: Promise<QueuedEvent[]>;
}

/**
 * The input pump: reads new client entries from the bus into the run's mailbox. Pumps are
 * serialized, so an await inside one (taking a shared prewarm) cannot let a concurrent
 * wake-up queue a later entry first.
 */
export class InputPump {
  private pumping: Promise<void> = Promise.resolve();

  constructor(private readonly ctx: RunContext) {}

  /**
   * Reads and queues the entries after the last one queued. With `read` (entries the caller
   * already read, the run's first read at its start), those are queued without a read of their
   * own, and `beside` runs meanwhile: its events (a refused admission) are queued first.
   */
  pump(read?: SeededRead): Promise<void> {
    const next = this.pumping.then(() => this.pumpOnce(read));
    // A failed read must not poison the chain: the caller sees it, the next pump starts fresh.
    this.pumping = next.catch(() => undefined);
    return next;
  }

  private async pumpOnce(read: SeededRead | undefined): Promise<void> {
    const ctx = this.ctx;
    const from = ctx.inputIndex;
    const entries = (read ? read.entries : await ctx.deps.bus.readInput(ctx.ref, ctx.generation, from)).filter((e) => e.index >= from);
    const [events, first] = await Promise.all([this.eventsOf(entries), read?.beside ?? []]);
    for (const q of first) ctx.queue.push(q);
    for (const q of events) ctx.queue.push(q);
    // Only now: entries of a pump that failed on the way (a prewarm take) are read again by the next.
    const last = entries.at(-1);
    if (last) ctx.inputIndex = last.index + 1;
  }

  private async eventsOf(entries: readonly InputEntry[]): Promise<QueuedEvent[]> {
    const ctx = this.ctx;
    const events: QueuedEvent[] = [];
    for (const e of entries) {
      const decoded = decodeClientMessage(e.payload);
      if (!decoded.ok) {
        // The ingress validated it; a bad entry here means a bug, not a reason to stop the run.
        ctx.log.warn({ index: e.index }, "undecodable input entry skipped");
        continue;
      }
      const classified = classifyClientMessage(decoded.message);
      // From here on a missing shared prewarm is this run's own doing, not another request's.
      if (classified.kind === "run_request") ctx.runRequestArrived = true;
      const event = await this.withSharedPrewarm(classified);
      if (event.kind === "run_request" && ctx.runRequestIndex === undefined) ctx.runRequestIndex = e.index;
      events.push({ ev: { type: "client", event }, inputIndex: e.index });
    }
    return events;
  }

  /**
   * A run_request reuses its conversation's shared prewarm (taken once, atomically); a
   * prewarmed request that gets its own run_request withdraws the shared copy.
   */
  private async withSharedPrewarm(event: ClientEvent): Promise<ClientEvent> {
    const ctx = this.ctx;
    if (event.kind !== "run_request" || !isAwaitingRun(ctx.state)) return event;
    const conversationId = ctx.state.prewarm?.conversationId || event.request.conversationId;
    if (!conversationId) return event;
    const taken = await ctx.deps.bus.takePrewarm(ctx.ref.tenantId, conversationId);
    if (ctx.state.prewarm || !taken) return event;
    return { ...event, sharedPrewarm: fromBinary(PrewarmRequestSchema, taken) };
  }
}
