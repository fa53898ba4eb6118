// What the run saves for the next owner (docs/architecture.md "Takeover state"), and when;
// takeover.ts restores it.
import { isSummarizing, snapshotRunState } from "@byok/protocol";
import { encodeSnapshot, type RunSnapshot } from "../snapshot.js";
import type { RunContext } from "./context.js";

/**
 * When the loop saves a snapshot: after every batch that changed more than a pass's progress.
 * A pass that only makes progress (text, thinking and tool-argument deltas, output items
 * opening, a text item closing) saves nothing: everything it streamed is in the output stream,
 * and a takeover reads it back from there (takeover.ts, `withStreamedTail`) before it re-runs
 * the pass. Only a summary pass, which streams nothing, saves its progress at most every
 * `snapshotIntervalMs`. Always saved: the first output of an attempt (a takeover must know the
 * client saw output, to send the notice), a finished tool call or reasoning item (the cut
 * attempt's history entry keeps them), and a new budget lease (the next owner settles the cut
 * attempt's lease from it). A pass's first text is two provider events (its text item opens,
 * then the delta); counting the item as progress keeps a standalone save out of the way of the
 * first text frame (docs/benchmarks.md "First text and run start").
 *
 * A due snapshot that no frames carry may wait for the next batch when that batch is already
 * queued (`postpone`), once: at a run's start the checkpoint read's batch emits nothing, and
 * the next one (the first frame) carries it. A takeover in between restarts from the previous
 * snapshot and re-reads the input from its index, as it would a moment earlier.
 */
export class SnapshotSchedule {
  private savedAt = 0;
  private savedOutputStarted = false;
  /** The last due snapshot was postponed: the next batch saves one whatever it did. */
  private owed = false;
  /** The latest due() was owed (a postponed one is not postponed again). */
  private dueWasOwed = false;

  constructor(private readonly ctx: RunContext) {}

  due(passProgressOnly: boolean): boolean {
    const outputStarted = this.ctx.state.current?.outputStarted ?? false;
    this.dueWasOwed = this.owed;
    this.owed = false;
    const due =
      this.dueWasOwed ||
      !passProgressOnly ||
      outputStarted !== this.savedOutputStarted ||
      this.ctx.meterTicket !== this.ctx.snapshotMeterTicket ||
      (isSummarizing(this.ctx.state) && Date.now() - this.savedAt >= this.ctx.deps.timers.snapshotIntervalMs);
    if (due) {
      this.savedAt = Date.now();
      this.savedOutputStarted = outputStarted;
    }
    return due;
  }

  /** The due snapshot found no frames to ride with: true if it waits for the queued next batch. */
  postpone(nextQueued: boolean): boolean {
    if (!nextQueued || this.dueWasOwed) return false;
    this.owed = true;
    return true;
  }
}

/** What the next owner needs, as it stands once `outputFrames` frames are appended. */
export function runSnapshot(ctx: RunContext, outputFrames: number): Uint8Array {
  // What was saved, not what was due: the lease may arrive while a save is on its way.
  ctx.snapshotMeterTicket = ctx.meterTicket;
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
