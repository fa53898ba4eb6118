import {
  decodeClientMessage, isAwaitingRun, isCallingModel, isEnded, isFinishing, isImporting, isInTurn, readRunStart, restoreRunState, withStreamedTail,
  type RunStart,
} from "@byok/protocol";
import type { InputEntry } from "@byok/bus";
import type { RunSnapshot } from "../snapshot.js";
import type { RunContext } from "./context.js";
import { execute } from "./effects.js";
import { attemptInfo, estimatedUsage } from "./model-call.js";

/**
 * Takeover: rebuild the run from the previous owner's snapshot (`snap`, read by the claim),
 * then re-run a cut model call. `input`: the generation's input entries from index 0, read
 * beside the claim (the run request is among them: input is only ever appended).
 * Returns false when there is nothing to take over (a new run).
 */
export async function restore(ctx: RunContext, snap: RunSnapshot | undefined, input: readonly InputEntry[]): Promise<boolean> {
  if (!snap) return false;
  let run: RunStart | undefined;
  if (snap.runRequestIndex !== undefined) {
    const entry = input.find((e) => e.index === snap.runRequestIndex);
    const decoded = entry && decodeClientMessage(entry.payload);
    if (decoded?.ok && decoded.message.message.case === "runRequest") run = readRunStart(decoded.message.message.value, ctx.ref.requestId);
  }
  ctx.state = restoreRunState(ctx.ref.requestId, ctx.generation, ctx.policy, snap.state, run);
  // A streaming pass saves no snapshot (snapshots.ts): what it sent after this one is in the output.
  if (isCallingModel(ctx.state)) ctx.state = withStreamedTail(ctx.state, await outputAfter(ctx, snap.outputFrames));
  ctx.inputIndex = snap.inputIndex;
  ctx.processedInput = snap.inputIndex;
  ctx.runRequestIndex = snap.runRequestIndex;
  ctx.outputFrames = snap.outputFrames;
  ctx.retries = snap.retries;
  ctx.targetIndex = snap.targetIndex;
  // A run past its first pass marked its conversation before this snapshot was saved (effects
  // run before the snapshot of their batch): the new owner only checks for a newer run.
  ctx.conversationMarked = isInTurn(ctx.state) || isFinishing(ctx.state);
  // An ephemeral run's own history (never in the store) is what its prompt is rebuilt from.
  if (snap.content) ctx.held?.adopt(snap.content);
  ctx.log.warn({ phase: snap.state.phase, inputIndex: snap.inputIndex, outputFrames: snap.outputFrames }, "took over run");
  if (run && !isAwaitingRun(ctx.state) && !isEnded(ctx.state)) {
    // The provider stream of the previous owner is gone: re-run the pass from stored history.
    const res = await ctx.deps.resolveTargets(run, ctx.ref.tenantId);
    if (res.ok) ctx.targets = res.targets;
    ctx.registerSecrets(run);
    ctx.push({ type: "resume" });
  }
  // A takeover during an import (or the read of a stored checkpoint) starts it over.
  if (run && isImporting(ctx.state)) {
    const conversationId = run.conversationId;
    await execute(ctx, run.conversationState ? { type: "check_history", conversationId } : { type: "load_checkpoint", conversationId });
  }
  // Attempts the previous owner saw end but had not settled: settled now (a repeat changes nothing).
  for (const u of snap.unsettled ?? []) {
    const target = ctx.targets[u.targetIndex];
    if (run && target) await ctx.meter.settleAttempt(attemptInfo(ctx, run, target, u.modelCallId, u.attempt, u.inputTokens), u.ticket, u.result);
  }
  const cut = snap.state.current;
  if (run && cut && isCallingModel(snap.state)) {
    // The cut attempt's ledger row and its budget lease are settled by the worker that takes
    // over (once: a paused previous owner that resumes finds the lease settled).
    const target = ctx.targets[ctx.targetIndex];
    if (target) {
      const info = attemptInfo(ctx, run, target, cut.modelCallId, snap.state.attempt, 0);
      await ctx.meter.settleAttempt(info, snap.meterTicket, {
        outcome: "interrupted",
        usage: estimatedUsage(0, cut.text, cut.thinkingText, target.model),
        ttftMs: undefined,
        ttftOverheadUs: undefined,
        durationMs: 0,
      });
    }
  }
  return true;
}

/** Pages of the output tail a takeover reads back. */
const TAIL_PAGE = 1_000;

/** The generation's output frames from `fromIndex` on (the previous owner is fenced: nothing more arrives). */
async function outputAfter(ctx: RunContext, fromIndex: number): Promise<Uint8Array[]> {
  const frames: Uint8Array[] = [];
  for (let from = fromIndex; ; ) {
    const page = await ctx.deps.bus.readOutput(ctx.ref, ctx.generation, from, TAIL_PAGE);
    for (const e of page.entries) frames.push(e.frame);
    if (page.entries.length < TAIL_PAGE) return frames;
    from = page.entries.at(-1)!.index + 1;
  }
}
