/**
 * The Store implementation over drizzle-orm. Driver-neutral: it receives an already
 * migrated database from drivers/pglite.ts or drivers/postgres.ts.
 * Every statement filters on tenant_id: no method can read or change another tenant's rows.
 */
import { and, asc, desc, eq, inArray, max, sql } from "drizzle-orm";
import type { OpenedDatabase } from "./drivers/opened.js";
import { columnList, rowsOf } from "./db.js";
import { appendTarget, assertBlobId } from "./checks.js";
import { dedupeIdentity, dedupeKeyOf } from "./dedupe.js";
import { assertFence, createFenceClaims, fencedError, fenceHolds } from "./fence.js";
import { appliedMigrations } from "./migrations.js";
import { blobs, checkpoints, conversations, history } from "./schema.js";
import type { CheckpointRecord, ConversationRecord, HistoryEntry, NewHistoryEntry, Store } from "./types.js";

type HistoryRow = typeof history.$inferSelect;

export function createDrizzleStore(opened: OpenedDatabase): Store {
  const { db } = opened;
  let closing: Promise<void> | undefined;

  const conversationKey = [conversations.tenantId, conversations.conversationId];
  const historyOf = (tenantId: string, conversationId: string) =>
    and(eq(history.tenantId, tenantId), eq(history.conversationId, conversationId));

  return {
    async upsertConversation(tenantId, conversationId, meta = {}) {
      // `||` on jsonb is a shallow merge done by the server, so concurrent upserts never lose a key.
      const [row] = await db
        .insert(conversations)
        .values({ tenantId, conversationId, meta })
        .onConflictDoUpdate({
          target: conversationKey,
          set: { meta: sql`${conversations.meta} || excluded.meta`, updatedAt: sql`now()` },
        })
        .returning();
      if (row === undefined) throw new Error("upsert returned no row");
      return toConversation(row);
    },

    async getConversation(tenantId, conversationId) {
      const [row] = await db
        .select()
        .from(conversations)
        .where(and(eq(conversations.tenantId, tenantId), eq(conversations.conversationId, conversationId)));
      return row === undefined ? undefined : toConversation(row);
    },

    claimRun: createFenceClaims(db),

    async appendHistory(entries, fence) {
      const target = appendTarget(entries);
      if (target === undefined) return [];
      const { tenantId, conversationId } = target;
      return db.transaction(async (tx) => {
        // Creating-or-touching the conversation row takes its row lock until commit: concurrent
        // appenders to this conversation queue here, so each reads the max(seq) the previous
        // one committed (READ COMMITTED takes a fresh snapshot per statement) and seqs stay contiguous.
        // A fenced append checks its fence in the same statement, first (the fence row stays
        // share-locked until commit): no row means a newer claim, and nothing is written.
        if (fence === undefined) {
          await tx
            .insert(conversations)
            .values({ tenantId, conversationId })
            .onConflictDoUpdate({ target: conversationKey, set: { updatedAt: sql`now()` } });
        } else {
          const columns = columnList([conversations.tenantId, conversations.conversationId]);
          const touched = await tx.execute(
            sql`insert into ${conversations} (${columns}) select ${tenantId}, ${conversationId} where ${fenceHolds(tenantId, fence)} on conflict (${columns}) do update set ${columnList([conversations.updatedAt])} = now() returning 1`,
          );
          if (rowsOf(touched).length === 0) throw fencedError(fence);
        }

        // One read (after the lock above): the conversation's last seq, and the rows already
        // stored under the entries' dedupe keys (left-joined, so the max comes back without any).
        const keys = [...new Set(entries.map(dedupeKeyOf).filter((k): k is string => k !== null))];
        const stored = new Map<string, HistoryRow>();
        const last = tx.$with("last").as(tx.select({ seq: max(history.seq).as("last_seq") }).from(history).where(historyOf(tenantId, conversationId)));
        const read = await tx
          .with(last)
          .select({ lastSeq: last.seq, row: history })
          .from(last)
          .leftJoin(history, keys.length > 0 ? and(historyOf(tenantId, conversationId), inArray(history.dedupeKey, keys)) : sql`false`);
        for (const { row: r } of read) {
          if (r?.dedupeKey != null) stored.set(dedupeIdentity(r.requestId, r.generation, r.dedupeKey), r);
        }
        let next = (read[0]?.lastSeq ?? -1) + 1;

        // For each input, the seq it ends up at: an earlier row (deduplicated) or a new one.
        const seqs: number[] = [];
        const fresh: (typeof history.$inferInsert)[] = [];
        const pending = new Map<string, number>();
        for (const e of entries) {
          const key = dedupeKeyOf(e);
          const identity = key === null ? undefined : dedupeIdentity(e.requestId, e.generation, key);
          const known = identity === undefined ? undefined : (stored.get(identity)?.seq ?? pending.get(identity));
          if (known !== undefined) {
            seqs.push(known);
            continue;
          }
          const seq = next++;
          if (identity !== undefined) pending.set(identity, seq);
          seqs.push(seq);
          fresh.push(toRow(e, seq, key));
        }

        const bySeq = new Map([...stored.values()].map((r) => [r.seq, r]));
        if (fresh.length > 0) {
          for (const r of await tx.insert(history).values(fresh).returning()) bySeq.set(r.seq, r);
        }
        return seqs.map((seq) => {
          const row = bySeq.get(seq);
          if (row === undefined) throw new Error(`appendHistory: seq ${seq} missing after insert`);
          return toHistoryEntry(row);
        });
      });
    },

    async listHistory(tenantId, conversationId) {
      const rows = await db.select().from(history).where(historyOf(tenantId, conversationId)).orderBy(asc(history.seq));
      return rows.map(toHistoryEntry);
    },

    async markInterrupted(tenantId, conversationId, seqs, fence) {
      if (seqs.length === 0) return;
      const marks = and(historyOf(tenantId, conversationId), inArray(history.seq, seqs));
      const marked = await db
        .update(history)
        .set({ interrupted: true })
        .where(fence === undefined ? marks : and(marks, fenceHolds(tenantId, fence)))
        .returning({ seq: history.seq });
      // Nothing marked: the statement refused a stale epoch, or none of the seqs exist; say which.
      if (marked.length === 0) await assertFence(db, tenantId, fence);
    },

    async saveCheckpoint(c, fence) {
      if (fence === undefined) {
        await db.insert(checkpoints).values({ tenantId: c.tenantId, conversationId: c.conversationId, requestId: c.requestId, generation: c.generation, state: c.state });
        return;
      }
      const columns = columnList([checkpoints.tenantId, checkpoints.conversationId, checkpoints.requestId, checkpoints.generation, checkpoints.state]);
      const saved = await db.execute(
        sql`insert into ${checkpoints} (${columns}) select ${c.tenantId}, ${c.conversationId}, ${c.requestId}, ${c.generation}::integer, ${c.state}::bytea where ${fenceHolds(c.tenantId, fence)} returning 1`,
      );
      if (rowsOf(saved).length === 0) throw fencedError(fence);
    },

    async latestCheckpoint(tenantId, conversationId) {
      const [row] = await db
        .select()
        .from(checkpoints)
        .where(and(eq(checkpoints.tenantId, tenantId), eq(checkpoints.conversationId, conversationId)))
        .orderBy(desc(checkpoints.id))
        .limit(1);
      if (row === undefined) return undefined;
      const { id: _id, ...record } = row;
      return record satisfies CheckpointRecord;
    },

    async putBlobs(tenantId, puts) {
      for (const b of puts) assertBlobId(b.id, b.data);
      if (puts.length === 0) return;
      // Same id means same bytes, so a repeat put (or a repeat within the batch) changes nothing.
      await db
        .insert(blobs)
        .values(puts.map((b) => ({ tenantId, blobId: b.id, data: b.data })))
        .onConflictDoNothing();
    },

    async getBlob(tenantId, blobId) {
      const [row] = await db
        .select({ data: blobs.data })
        .from(blobs)
        .where(and(eq(blobs.tenantId, tenantId), eq(blobs.blobId, blobId)));
      return row?.data;
    },

    migrations: () => appliedMigrations(db, opened.migrationConfig),

    close() {
      closing ??= opened.close();
      return closing;
    },
  };
}

function toRow(e: NewHistoryEntry, seq: number, dedupeKey: string | null): typeof history.$inferInsert {
  return {
    tenantId: e.tenantId,
    conversationId: e.conversationId,
    seq,
    requestId: e.requestId,
    generation: e.generation,
    turn: e.turn,
    kind: e.kind,
    body: e.body,
    dedupeKey,
    interrupted: e.interrupted,
  };
}

function toHistoryEntry(r: HistoryRow): HistoryEntry {
  return {
    tenantId: r.tenantId,
    conversationId: r.conversationId,
    seq: r.seq,
    requestId: r.requestId,
    generation: r.generation,
    turn: r.turn,
    kind: r.kind,
    body: r.body,
    interrupted: r.interrupted,
    createdAt: r.createdAt,
  };
}

function toConversation(r: typeof conversations.$inferSelect): ConversationRecord {
  return {
    tenantId: r.tenantId,
    conversationId: r.conversationId,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    meta: r.meta,
  };
}
