import { fromBinary } from "@bufbuild/protobuf";
import { classifyClientMessage, decodeClientMessage, isAwaitingRun, type ClientEvent } from "@byok/protocol";
import { PrewarmRequestSchema } from "@byok/wire";
import type { RunContext } from "./context.js";

/**
 * The input pump: reads new client entries from the bus into the run's mailbox. Pumps are
 * serialized, so an await inside one (taking a shared prewarm) cannot let a concurrent
 * wake-up queue a later entry first.
 */
export class InputPump {
  private pumping: Promise<void> = Promise.resolve();

  constructor(private readonly ctx: RunContext) {}

  pump(): Promise<void> {
    const next = this.pumping.then(() => this.pumpOnce());
    // A failed read must not poison the chain: the caller sees it, the next pump starts fresh.
    this.pumping = next.catch(() => undefined);
    return next;
  }

  private async pumpOnce(): Promise<void> {
    const ctx = this.ctx;
    const entries = await ctx.deps.bus.readInput(ctx.ref, ctx.generation, ctx.inputIndex);
    for (const e of entries) {
      if (e.index < ctx.inputIndex) continue;
      ctx.inputIndex = e.index + 1;
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
      ctx.queue.push({ ev: { type: "client", event }, inputIndex: e.index });
    }
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
