import { blobId, blobKey, turnRequestIds, verifiedBlobs, type RunStart } from "@byok/protocol";
import type { HistoryEntry } from "@byok/store";
import { historyOfClientTurns, type ClientTurns } from "../history.js";
import type { RunContext } from "./context.js";

/**
 * The stored history this run's passes read: only the turns the client's conversation_state
 * still lists, plus the run's own entries (docs/architecture.md "History"). The turns are
 * resolved once per run.
 */
export async function conversationHistory(ctx: RunContext, run: RunStart): Promise<HistoryEntry[]> {
  const all = await ctx.content.listHistory(ctx.ref.tenantId, run.conversationId);
  ctx.clientTurns ??= clientTurnsOf(ctx, run);
  return historyOfClientTurns(all, await ctx.clientTurns);
}

/**
 * Request ids of the client's turns. A turn is inline bytes or a blob id, resolved from the
 * run's verified `pre_fetched_blobs` or from the blobs the gateway stored when it sent them
 * (each checked against its SHA-256 id); a turn resolvable from neither names no stored request.
 */
async function clientTurnsOf(ctx: RunContext, run: RunStart): Promise<ClientTurns | undefined> {
  const turns = run.conversationState?.turns ?? [];
  if (turns.length === 0) return undefined;
  const { have } = verifiedBlobs(run.preFetchedBlobs);
  for (const t of turns) {
    if (t.byteLength !== 32 || have.has(blobKey(t))) continue;
    const stored = await ctx.content.getBlob(ctx.ref.tenantId, t);
    if (stored && blobKey(blobId(stored)) === blobKey(t)) have.set(blobKey(t), stored);
  }
  const requestIds = new Set(turnRequestIds(turns, have).filter((id): id is string => id !== undefined));
  return { requestIds, current: { requestId: ctx.ref.requestId, generation: ctx.generation } };
}
