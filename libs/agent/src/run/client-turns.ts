import { blobId, blobKey, missingBlobs, turnRequestIds, verifiedBlobs, type Blob, type RunStart } from "@byok/protocol";
import type { HistoryEntry } from "@byok/store";
import { historyOfClientTurns, type ClientTurns } from "../history.js";
import type { RunContext } from "./context.js";

/**
 * The stored history this run's passes read: only the turns the client's conversation_state
 * still lists, plus the run's own entries (docs/architecture.md "History"). The turns are
 * resolved once per run.
 */
export async function conversationHistory(ctx: RunContext, run: RunStart, touch?: Record<string, unknown>): Promise<HistoryEntry[]> {
  const all = await ctx.content.listHistory(ctx.ref.tenantId, run.conversationId, touch);
  ctx.clientTurns ??= clientTurnsOf(ctx, run);
  return historyOfClientTurns(all, await ctx.clientTurns);
}

/**
 * Request ids of the client's turns. A turn is inline bytes or a blob id, resolved from the
 * run's verified `pre_fetched_blobs` or from the blobs the gateway stored (each checked against
 * its SHA-256 id); a turn resolvable from neither names no stored request. A state with zero
 * turns (restored to the very beginning) names none; no state at all leaves history as stored.
 */
async function clientTurnsOf(ctx: RunContext, run: RunStart): Promise<ClientTurns | undefined> {
  if (!run.conversationState) return undefined;
  const turns = run.conversationState.turns;
  const { have } = verifiedBlobs(run.preFetchedBlobs);
  for (const b of await storedBlobs(ctx, turns.filter((t) => t.byteLength === 32 && !have.has(blobKey(t))))) have.set(blobKey(b.id), b.data);
  const requestIds = new Set(turnRequestIds(turns, have).filter((id): id is string => id !== undefined));
  return { requestIds, current: { requestId: ctx.ref.requestId, generation: ctx.generation } };
}

/**
 * Every blob the turns reference (the turns, their user messages and steps) that the store
 * holds and `have` lacks, each checked against its id: what an import or a checkpoint served
 * from the store need not ask of the client.
 */
export async function storedTurnBlobs(ctx: RunContext, turns: readonly Uint8Array[], have: ReadonlyMap<string, Uint8Array> = new Map()): Promise<Blob[]> {
  const known = new Map(have);
  const found: Blob[] = [];
  // Turns first, then what the resolved turns reference: two rounds, one statement each.
  for (let round = 0; round < 2; round++) {
    const fresh = await storedBlobs(ctx, missingBlobs(turns, known));
    if (fresh.length === 0) break;
    for (const b of fresh) known.set(blobKey(b.id), b.data);
    found.push(...fresh);
  }
  return found;
}

/** The blobs of `ids` the store holds, each checked against its id; one store statement for all of them. */
async function storedBlobs(ctx: RunContext, ids: readonly Uint8Array[]): Promise<Blob[]> {
  if (ids.length === 0) return [];
  const data = await ctx.content.getBlobs(ctx.ref.tenantId, ids);
  const read = ids.map((id, i) => ({ id, data: data[i] }));
  return read.filter((b): b is Blob => b.data !== undefined && blobKey(blobId(b.data)) === blobKey(b.id));
}
