// What the run saves for the next owner (docs/architecture.md "Takeover state"), and when;
// takeover.ts restores it.
import { snapshotRunState } from "@byok/protocol";
import { encodeSnapshot, type RunSnapshot } from "../snapshot.js";
import type { RunContext } from "./context.js";

/**
 * When the loop saves a snapshot: after every batch that changed more than streamed text;
 * while a pass only streams deltas, at most every `snapshotIntervalMs` (a takeover re-runs the
 * pass anyway, and the partial text it loses is only the interrupted tail). The first output
 * of an attempt is always saved: a takeover must know the client saw output (to send the notice).
 */
export class SnapshotSchedule {
  private savedAt = 0;
  private savedOutputStarted = false;

  constructor(private readonly ctx: RunContext) {}

  due(streamingOnly: boolean): boolean {
    const outputStarted = this.ctx.state.current?.outputStarted ?? false;
    const due =
      !streamingOnly ||
      outputStarted !== this.savedOutputStarted ||
      Date.now() - this.savedAt >= this.ctx.deps.timers.snapshotIntervalMs;
    if (due) {
      this.savedAt = Date.now();
      this.savedOutputStarted = outputStarted;
    }
    return due;
  }
}

/** What the next owner needs, as it stands once `outputFrames` frames are appended. */
export function runSnapshot(ctx: RunContext, outputFrames: number): Uint8Array {
  const snap: RunSnapshot = {
    v: 2,
    inputIndex: ctx.processedInput,
    runRequestIndex: ctx.runRequestIndex,
    outputFrames,
    retries: ctx.retries,
    targetIndex: ctx.targetIndex,
    state: snapshotRunState(ctx.state),
    ...(ctx.held ? { content: ctx.held.current() } : {}),
    ...(ctx.meterTicket === undefined ? {} : { meterTicket: ctx.meterTicket }),
    ...(ctx.unsettled.size > 0 ? { unsettled: [...ctx.unsettled.values()] } : {}),
  };
  return encodeSnapshot(snap);
}

/**
 * Saves the snapshot on its own, fenced by epoch (a batch with frames carries it in its append
 * instead, effects.ts `flush`); a refused save means ownership is lost.
 */
export async function saveSnapshot(ctx: RunContext): Promise<void> {
  if (!(await ctx.deps.bus.saveSnapshot(ctx.ref, ctx.generation, ctx.epoch, runSnapshot(ctx, ctx.outputFrames)))) {
    ctx.fencedOut("snapshot");
  }
}
