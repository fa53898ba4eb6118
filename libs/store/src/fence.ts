import { and, eq, lt, sql } from "drizzle-orm";
import type { Db } from "./db.js";
import { StoreError } from "./errors.js";
import { runFences } from "./schema.js";
import type { RunFence } from "./types.js";

/** Anything that runs statements: the database or an open transaction. */
type Executor = Pick<Db, "select" | "insert" | "delete">;

/**
 * Records `fence.epoch` as the generation's latest claim (never lowering it) and prunes the
 * tenant's day-old fences. True when the epoch is the latest, false when a newer owner already
 * claimed: then every write of this epoch is refused.
 */
export async function claimFence(db: Executor, tenantId: string, fence: RunFence): Promise<boolean> {
  const [row] = await db
    .insert(runFences)
    .values({ tenantId, requestId: fence.requestId, generation: fence.generation, epoch: fence.epoch })
    .onConflictDoUpdate({
      target: [runFences.tenantId, runFences.requestId, runFences.generation],
      set: { epoch: sql`greatest(${runFences.epoch}, excluded.epoch)`, claimedAt: sql`now()` },
    })
    .returning({ epoch: runFences.epoch });
  await db.delete(runFences).where(and(eq(runFences.tenantId, tenantId), lt(runFences.claimedAt, sql`now() - interval '1 day'`)));
  return row !== undefined && row.epoch === fence.epoch;
}

/**
 * The first statement of a fenced write's transaction: reads the generation's latest claim
 * under a share lock, and throws StoreError "fenced" (the transaction rolls back, nothing is
 * written) when it is newer than the writer's epoch. A claim's upsert needs the row's exclusive
 * lock, so it waits until the write committed: no claim can fall between the check and the write.
 */
export async function assertFence(tx: Executor, tenantId: string, fence: RunFence | undefined): Promise<void> {
  if (fence === undefined) return;
  const [row] = await tx
    .select({ epoch: runFences.epoch })
    .from(runFences)
    .where(and(eq(runFences.tenantId, tenantId), eq(runFences.requestId, fence.requestId), eq(runFences.generation, fence.generation)))
    .for("share");
  if (row !== undefined && row.epoch > fence.epoch) {
    throw new StoreError("fenced", `run ${fence.requestId} generation ${fence.generation}: epoch ${fence.epoch} was fenced by epoch ${row.epoch}`);
  }
}
