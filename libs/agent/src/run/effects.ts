import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  coalesceDeltas, encodeErrorDetails, encodeServerMessage, historyDedupeKey, isCoalescableDelta, verifiedBlobs, type Effect, type RunEvent,
} from "@byok/protocol";
import type { AppendAlongside, NewCheckpoint } from "@byok/store";
import { ConversationStateStructureSchema, PrewarmRequestSchema } from "@byok/wire";
import { storedTurnBlobs } from "./client-turns.js";
import type { RunContext } from "./context.js";
import { abortModelCall, startModelCall } from "./model-call.js";
import { runSnapshot } from "./snapshots.js";

/**
 * The effect interpreter: the state machine's effects (data) become I/O. Exhaustive: a new
 * effect type does not compile until it is handled here.
 */
export async function execute(ctx: RunContext, eff: Effect): Promise<void> {
  switch (eff.type) {
    case "emit":
      for (const f of eff.frames) ctx.pendingFrames.push(ctx.telemetry.frame(f, ctx.state));
      return;
    case "record_history":
      await recordHistory(ctx, eff.entries);
      return;
    case "start_model_call":
      // A new pass: what came before goes out while the pass is prepared (its history read, the
      // conversation's touch: one round trip for both), and the pass's first delta will not be
      // held. Order is kept: the pass's events reach the loop only after this step.
      await settleAll([flush(ctx).then(() => void (ctx.deltaStreaming = false)), startModelCall(ctx, eff.modelCallId, eff.attempt)]);
      return;
    case "abort_model_call":
      abortModelCall(ctx);
      return;
    case "end":
      await endRun(ctx, eff.decision);
      return;
    case "log":
      ctx.log[eff.level](eff.fields ?? {}, eff.message);
      return;
    case "store_blobs":
      if (!ctx.state.run) return;
      // One statement for all of them, so the set_blob_args behind them leave after one store round trip.
      await ctx.content.putBlobs(ctx.ref.tenantId, eff.blobs);
      return;
    case "tool_timer":
      ctx.after(eff.ms, { type: "tool_timeout", callId: eff.callId, bridgeId: eff.bridgeId });
      return;
    case "check_history": {
      const history = await ctx.content.listHistory(ctx.ref.tenantId, eff.conversationId);
      const known = history.length > 0;
      const run = ctx.state.run;
      // An import takes the blobs the store holds from the store: get_blob_args asks only for the rest.
      const blobs = known || !run ? [] : await storedTurnBlobs(ctx, run.conversationState?.turns ?? [], verifiedBlobs(run.preFetchedBlobs).have);
      ctx.push({ type: "history_state", known, blobs });
      return;
    }
    case "load_checkpoint":
      ctx.push({ type: "checkpoint_loaded", stored: await loadCheckpoint(ctx, eff.conversationId) });
      return;
    case "save_checkpoint":
      await ctx.content.saveCheckpoint(checkpointOf(ctx, eff), ctx.fence);
      return;
    case "import_wait":
      ctx.after(ctx.deps.timers.kvAckTimeoutMs, { type: "import_timeout" });
      return;
    case "share_prewarm":
      await ctx.deps.bus.savePrewarm(ctx.ref.tenantId, eff.conversationId, toBinary(PrewarmRequestSchema, eff.request), ctx.deps.timers.prewarmTtlMs);
      ctx.conversationChanged();
      return;
    case "prewarm_wait":
      ctx.after(ctx.deps.timers.prewarmTtlMs, { type: "prewarm_expired" });
      return;
    case "web_search":
      ctx.detach(runWebSearch(ctx, eff.callId, eff.query));
      return;
    case "mark_conversation_run":
      await ctx.deps.bus.markConversationRun(ctx.ref.tenantId, eff.conversationId, ctx.runKey, ctx.deps.timers.conversationRunTtlMs);
      ctx.conversationMarked = true;
      ctx.conversationChanged();
      return;
    case "kv_wait":
      ctx.after(ctx.deps.timers.kvAckTimeoutMs, { type: "kv_timeout", seq: eff.seq });
      return;
    default: {
      const unhandled: never = eff;
      throw new Error(`unhandled effect ${(unhandled as Effect).type}`);
    }
  }
}

/**
 * Effects that may run beside their neighbours: writes that depend on no other effect of the
 * step (the history append, the blobs, the conversation's run mark) and the instant ones (a
 * frame queued, a timer armed, a log line). What they produce is only seen after the step: the
 * frames they queue leave at the next flush, once every one of them completed.
 */
const RUNS_BESIDE: ReadonlySet<Effect["type"]> = new Set([
  "record_history", "store_blobs", "mark_conversation_run", "emit", "log", "kv_wait", "tool_timer", "import_wait", "prewarm_wait",
]);

/**
 * Runs one step's effects in order, except that neighbours in RUNS_BESIDE go out together (one
 * round trip where a run's start made three: the user's history entry, the checkpoint's blobs
 * and the conversation mark before its first frame). A group's blobs ride in its history append
 * (one store statement for both), and so does a checkpoint save that follows the append in the
 * step (a turn's end: the assistant's entry, the blobs and the final checkpoint in one
 * statement, atomically). A checkpoint save without an append to ride in runs on its own, after
 * what came before it, as the other effects do. Two history appends never share a group (their
 * order is the conversation's order). Every effect of a group settles before a failure is
 * thrown, so nothing runs on after the step.
 */
export async function executeAll(ctx: RunContext, effects: readonly Effect[]): Promise<void> {
  let group: Effect[] = [];
  const settle = async () => {
    if (group.length === 0) return;
    const running = group;
    group = [];
    await settleAll(startGroup(ctx, running));
  };
  for (const eff of effects) {
    const beside = RUNS_BESIDE.has(eff.type) || (eff.type === "save_checkpoint" && carriesCheckpoint(group));
    if (!beside || (eff.type === "record_history" && group.some((e) => e.type === "record_history"))) await settle();
    if (!beside) {
      await execute(ctx, eff);
      continue;
    }
    group.push(eff);
  }
  await settle();
}

/** Whether a checkpoint save may join the group: it has a history append to ride in, and no checkpoint yet. */
function carriesCheckpoint(group: readonly Effect[]): boolean {
  return group.some((e) => e.type === "record_history" && e.entries.length > 0) && !group.some((e) => e.type === "save_checkpoint");
}

/** Starts a group's effects, in order; its blobs and its checkpoint go with its history append when it has one. */
function startGroup(ctx: RunContext, group: readonly Effect[]): Promise<void>[] {
  const append = group.find((e) => e.type === "record_history");
  const blobs = group.flatMap((e) => (e.type === "store_blobs" ? e.blobs : []));
  const checkpoint = group.find((e) => e.type === "save_checkpoint");
  if (append === undefined || append.entries.length === 0 || (blobs.length === 0 && checkpoint === undefined)) return group.map((e) => execute(ctx, e));
  const alongside = { blobs, ...(checkpoint ? { checkpoint: checkpointOf(ctx, checkpoint) } : {}) };
  return group.flatMap((e) => {
    if (e === append) return [recordHistory(ctx, append.entries, alongside)];
    return e.type === "store_blobs" || e.type === "save_checkpoint" ? [] : [execute(ctx, e)];
  });
}

/** The checkpoint row a `save_checkpoint` effect saves. */
function checkpointOf(ctx: RunContext, eff: Extract<Effect, { type: "save_checkpoint" }>): NewCheckpoint {
  return {
    tenantId: ctx.ref.tenantId,
    conversationId: eff.conversationId,
    requestId: ctx.ref.requestId,
    generation: ctx.generation,
    state: toBinary(ConversationStateStructureSchema, eff.state),
  };
}

/** Waits for every task, then throws the first failure: nothing is left running behind an error. */
async function settleAll(tasks: readonly Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(tasks)).find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
}

/**
 * Whether the pending frames may wait for more deltas (up to the coalescing window): only model
 * deltas, and the pass's first delta already went out (so time to first text does not grow).
 */
export function mayHoldDeltas(ctx: RunContext): boolean {
  return (ctx.deps.timers.deltaCoalesceMs ?? 0) > 0 && ctx.deltaStreaming && ctx.pendingFrames.length > 0 && ctx.pendingFrames.every(isCoalescableDelta);
}

/**
 * Appends the frames emitted so far to the output stream, fenced by this owner's epoch, with
 * consecutive deltas merged: what is stored is exactly what every reader gets. With
 * `withSnapshot`, the run snapshot (counting these frames) rides in the same append, one
 * fenced write instead of two. Returns whether it did (false: nothing was pending).
 */
export async function flush(ctx: RunContext, withSnapshot = false): Promise<boolean> {
  if (ctx.pendingFrames.length === 0 || ctx.lost) return false;
  const merged = (ctx.deps.timers.deltaCoalesceMs ?? 0) > 0 ? coalesceDeltas(ctx.pendingFrames) : ctx.pendingFrames;
  ctx.pendingFrames = [];
  ctx.deltaStreaming = isCoalescableDelta(merged.at(-1)!);
  const frames = merged.map(encodeServerMessage);
  const snapshot = withSnapshot ? runSnapshot(ctx, ctx.outputFrames + frames.length) : undefined;
  const res = await ctx.deps.bus.appendOutput(ctx.ref, ctx.generation, ctx.epoch, frames, ctx.traceCarrier, snapshot);
  if (res.ok) {
    ctx.outputFrames = res.nextIndex;
    ctx.telemetry.appended();
    return withSnapshot;
  }
  // Another worker owns the generation now: stop without touching anything.
  if (res.reason === "fenced") ctx.fencedOut("append_output");
  else if (res.reason === "ended") ctx.loseOwnership({ reason: res.reason });
  else ctx.push({ type: "output_cap", limit: res.limit });
  return false;
}

async function endRun(ctx: RunContext, d: Extract<Effect, { type: "end" }>["decision"]): Promise<void> {
  await flush(ctx);
  const res = await ctx.deps.bus.endOutput(ctx.ref, ctx.generation, ctx.epoch, {
    ok: d.ok,
    ...(d.code ? { code: d.code } : {}),
    ...(d.message ? { message: d.message } : {}),
    ...(d.detail ? { errorDetails: encodeErrorDetails(d.detail) } : {}),
  });
  if (!res.ok && res.reason === "fenced") ctx.fencedOut("end_output");
  if (res.ok) ctx.telemetry.ended(d.ok ? "ok" : (d.code ?? "unknown"));
  ctx.log.info({ ok: d.ok, code: d.code }, "run ended");
}

async function recordHistory(
  ctx: RunContext,
  entries: Extract<Effect, { type: "record_history" }>["entries"],
  alongside?: AppendAlongside,
): Promise<void> {
  const run = ctx.state.run;
  if (!run) return;
  await ctx.content.appendHistory(
    entries.map((e, i) => ({
      tenantId: ctx.ref.tenantId,
      conversationId: run.conversationId,
      requestId: ctx.ref.requestId,
      generation: ctx.generation,
      turn: 0,
      kind: e.kind,
      body: { ...e.body, dedupeKey: historyDedupeKey(e, i) },
      interrupted: e.interrupted,
    })),
    ctx.fence,
    alongside,
  );
}

/** The conversation's latest stored checkpoint and the blobs it references that the store holds. */
async function loadCheckpoint(ctx: RunContext, conversationId: string): Promise<Extract<RunEvent, { type: "checkpoint_loaded" }>["stored"]> {
  const row = await ctx.content.latestCheckpoint(ctx.ref.tenantId, conversationId);
  if (!row) return undefined;
  const state = fromBinary(ConversationStateStructureSchema, row.state);
  return { state, blobs: await storedTurnBlobs(ctx, state.turns) };
}

async function runWebSearch(ctx: RunContext, callId: string, query: string): Promise<void> {
  const backend = ctx.deps.webSearch;
  let result: { hits: { title: string; url: string; snippet: string }[] } | { error: string };
  if (!backend) result = { error: "web search is disabled by policy" };
  else {
    try {
      result = { hits: await backend.search(query, AbortSignal.timeout(ctx.deps.timers.toolTimeoutMs)) };
    } catch (err) {
      ctx.log.warn({ err }, "web search backend failed");
      result = { error: "the web search backend failed" };
    }
  }
  ctx.push({ type: "web_search_result", callId, result });
}
