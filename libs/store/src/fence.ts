import { and, eq, lt, sql, type SQL } from "drizzle-orm";
import { bind, driverValue, renderStatement, rowReader, type Db } from "./db.js";
import type { OpenedDatabase } from "./drivers/opened.js";
import { StoreError } from "./errors.js";
import { runFences } from "./schema.js";
import type { RunFence } from "./types.js";

/** Anything that runs statements: the database or an open transaction. */
type Executor = Pick<Db, "select" | "insert" | "delete">;

/** How often one store prunes a tenant's day-old fences (at its first claim for the tenant, then at most this often). */
const FENCE_PRUNE_INTERVAL_MS = 10 * 60_000;

/**
 * The claim, rendered once (db.ts `renderStatement`; it runs at every generation start): the
 * upsert drizzle built here before, raising the epoch and never lowering it.
 */
const CLAIM = renderStatement((value, qb) =>
  qb
    .insert(runFences)
    .values({ tenantId: value("tenantId"), requestId: value("requestId"), generation: value("generation"), epoch: value("epoch") })
    .onConflictDoUpdate({
      target: [runFences.tenantId, runFences.requestId, runFences.generation],
      set: { epoch: sql`greatest(${runFences.epoch}, excluded.epoch)`, claimedAt: sql`now()` },
    })
    .returning({ epoch: runFences.epoch })
    .getSQL(),
);
const readClaim = rowReader({ epoch: runFences.epoch });

/**
 * The store's claims: each records `fence.epoch` as the generation's latest claim (never
 * lowering it). True when the epoch is the latest, false when a newer owner already claimed:
 * then every write of this epoch is refused. A tenant's day-old fences are pruned at its first
 * claim and then at most every FENCE_PRUNE_INTERVAL_MS, not at every claim (one statement less
 * per run; a fence is only read while its run can still be taken over, minutes).
 */
export function createFenceClaims(db: Executor, query: OpenedDatabase["query"]): (tenantId: string, fence: RunFence) => Promise<boolean> {
  const prunedAt = new Map<string, number>();
  const MAX_TENANTS = 10_000;
  return async (tenantId, fence) => {
    const { rows } = await query(CLAIM.text, bind(CLAIM, {
      tenantId: driverValue(runFences.tenantId, tenantId),
      requestId: driverValue(runFences.requestId, fence.requestId),
      generation: driverValue(runFences.generation, fence.generation),
      epoch: driverValue(runFences.epoch, fence.epoch),
    }));
    const row = rows[0] === undefined ? undefined : readClaim(rows[0]);
    const last = prunedAt.get(tenantId);
    if (last === undefined || Date.now() - last >= FENCE_PRUNE_INTERVAL_MS) {
      if (prunedAt.size >= MAX_TENANTS) prunedAt.clear();
      prunedAt.set(tenantId, Date.now());
      // Cold (once per tenant per interval): left as a drizzle call.
      await db.delete(runFences).where(and(eq(runFences.tenantId, tenantId), lt(runFences.claimedAt, sql`now() - interval '1 day'`)));
    }
    return row !== undefined && row.epoch === fence.epoch;
  };
}

/**
 * The condition a fenced write puts in its own statement (`INSERT … SELECT … WHERE` it, or
 * `UPDATE … WHERE … AND` it): true unless a claim newer than `fence.epoch` is recorded for the
 * generation, so a stale owner's write writes nothing. The fence row is read under a share lock:
 * a claim's upsert needs the row's exclusive lock, so it waits until the write committed, and a
 * claim that committed first is what the write sees (no claim falls between check and write).
 * The values may be placeholders, for a statement rendered once (db.ts `renderStatement`).
 */
export function fenceHolds(tenantId: string | SQL, fence: { [K in keyof RunFence]: RunFence[K] | SQL }): SQL {
  const claimed = sql`select ${runFences.epoch} from ${runFences} where ${and(
    eq(runFences.tenantId, tenantId),
    eq(runFences.requestId, fence.requestId),
    eq(runFences.generation, fence.generation),
  )} for share`;
  return sql`coalesce((${claimed}), ${fence.epoch}) <= ${fence.epoch}`;
}

/** What a write refused by `fenceHolds` throws (its transaction, if any, rolls back). */
export function fencedError(fence: RunFence): StoreError {
  return new StoreError("fenced", `run ${fence.requestId} generation ${fence.generation}: epoch ${fence.epoch} was fenced by a newer claim`);
}

/**
 * The first statement of a fenced write's transaction (for writes not yet expressed as one
 * statement): reads the generation's latest claim under a share lock, and throws StoreError
 * "fenced" (the transaction rolls back, nothing is written) when it is newer than the writer's
 * epoch.
 */
export async function assertFence(tx: Executor, tenantId: string, fence: RunFence | undefined): Promise<void> {
  if (fence === undefined) return;
  const [row] = await tx
    .select({ epoch: runFences.epoch })
    .from(runFences)
    .where(and(eq(runFences.tenantId, tenantId), eq(runFences.requestId, fence.requestId), eq(runFences.generation, fence.generation)))
    .for("share");
  if (row !== undefined && row.epoch > fence.epoch) throw fencedError(fence);
}
