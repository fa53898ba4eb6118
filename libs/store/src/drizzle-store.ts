/**
 * The Store implementation over drizzle-orm. Driver-neutral: it receives an already
 * migrated database from drivers/pglite.ts or drivers/postgres.ts.
 * Every statement filters on tenant_id: no method can read or change another tenant's rows.
 */
import { and, asc, desc, eq, getTableColumns, inArray, sql, type SQL } from "drizzle-orm";
import type { OpenedDatabase } from "./drivers/opened.js";
import { bind, columnList, columnName, driverValue, isUniqueViolation, renderStatement, rowReader, rowsOf, type RenderedStatement, type StatementBuilders } from "./db.js";
import { appendTarget, assertAlongside, assertBlobId } from "./checks.js";
import { dedupeIdentity, dedupeKeyOf } from "./dedupe.js";
import { assertFence, createFenceClaims, fencedError, fenceHolds } from "./fence.js";
import { appliedMigrations } from "./migrations.js";
import { blobs, checkpoints, conversations, history } from "./schema.js";
import type { AppendAlongside, BlobPut, CheckpointRecord, ConversationRecord, HistoryEntry, NewCheckpoint, NewHistoryEntry, RunFence, Store } from "./types.js";

export function createDrizzleStore(opened: OpenedDatabase): Store {
  const { db } = opened;
  let closing: Promise<void> | undefined;

  const historyOf = (tenantId: string, conversationId: string) =>
    and(eq(history.tenantId, tenantId), eq(history.conversationId, conversationId));

  return {
    async getConversation(tenantId, conversationId) {
      const [row] = await db
        .select()
        .from(conversations)
        .where(and(eq(conversations.tenantId, tenantId), eq(conversations.conversationId, conversationId)));
      return row === undefined ? undefined : toConversation(row);
    },

    claimRun: createFenceClaims(db, opened.query),

    async appendHistory(entries, fence, alongside = {}) {
      const target = appendTarget(entries);
      if (target === undefined) return [];
      assertAlongside(target, alongside);
      // One statement, no transaction: on PGlite a transaction holds the single connection across
      // its round trips, which every other run's statements wait behind. A concurrent appender of
      // the same dedupe key makes the statement fail on the unique index (its reads predate the
      // other's commit); the whole statement then undoes itself and runs again with fresh reads.
      for (let attempt = 1; ; attempt++) {
        try {
          return await appendOnce(opened.query, target.tenantId, target.conversationId, entries, fence, alongside);
        } catch (e) {
          if (!isUniqueViolation(e) || attempt >= APPEND_ATTEMPTS) throw e;
        }
      }
    },

    async listHistory(tenantId, conversationId, touch) {
      const values = {
        tenantId: driverValue(history.tenantId, tenantId),
        conversationId: driverValue(history.conversationId, conversationId),
      };
      const { rows } = touch === undefined
        ? await opened.query(LIST_HISTORY.text, bind(LIST_HISTORY, values))
        : await opened.query(LIST_HISTORY_TOUCHING.text, bind(LIST_HISTORY_TOUCHING, { ...values, meta: driverValue(conversations.meta, touch) }));
      return rows.map((r) => toHistoryEntry(readHistory(r)));
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
      const values: Record<string, unknown> = {
        tenantId: driverValue(checkpoints.tenantId, c.tenantId),
        conversationId: driverValue(checkpoints.conversationId, c.conversationId),
        ...checkpointValues(c),
      };
      if (fence === undefined) {
        await opened.query(SAVE_CHECKPOINT.unfenced.text, bind(SAVE_CHECKPOINT.unfenced, values));
        return;
      }
      Object.assign(values, { "fence:requestId": fence.requestId, "fence:generation": fence.generation, "fence:epoch": fence.epoch });
      const saved = await opened.query(SAVE_CHECKPOINT.fenced.text, bind(SAVE_CHECKPOINT.fenced, values));
      if (saved.rows.length === 0) throw fencedError(fence);
    },

    async latestCheckpoint(tenantId, conversationId) {
      const { rows } = await opened.query(LATEST_CHECKPOINT.text, bind(LATEST_CHECKPOINT, {
        tenantId: driverValue(checkpoints.tenantId, tenantId),
        conversationId: driverValue(checkpoints.conversationId, conversationId),
        limit: 1,
      }));
      return rows[0] === undefined ? undefined : (readCheckpoint(rows[0]) satisfies CheckpointRecord);
    },

    async putBlobs(tenantId, puts) {
      for (const b of puts) assertBlobId(b.id, b.data);
      if (puts.length === 0) return;
      // Same id means same bytes, so a repeat put (or a repeat within the batch) changes nothing.
      await opened.query(PUT_BLOBS.text, bind(PUT_BLOBS, blobValues(tenantId, puts)));
    },

    async getBlobs(tenantId, blobIds) {
      if (blobIds.length === 0) return [];
      const { rows } = await opened.query(GET_BLOBS.text, bind(GET_BLOBS, { tenantId: driverValue(blobs.tenantId, tenantId), ids: blobIds.map(hex) }));
      const found = new Map<string, Uint8Array>();
      for (const r of rows) {
        const row = readBlob(r);
        found.set(hex(row.blobId), row.data);
      }
      return blobIds.map((id) => found.get(hex(id)));
    },

    migrations: () => appliedMigrations(db, opened.migrationConfig),

    close() {
      closing ??= opened.close();
      return closing;
    },
  };
}

/*
 * The statements of a turn (besides the append below and the ledger record), rendered once (db.ts
 * `renderStatement`, README "Hot statements rendered once"): built with the same drizzle calls the
 * methods made before, so the text is what drizzle sent; rows are decoded with the columns' own
 * `mapFromDriverValue` (db.ts `rowReader`), as drizzle's select did.
 */

const listHistorySql = (value: (name: string) => SQL, qb: StatementBuilders) =>
  qb
    .select()
    .from(history)
    .where(and(eq(history.tenantId, value("tenantId")), eq(history.conversationId, value("conversationId"))))
    .orderBy(asc(history.seq))
    .getSQL();
const LIST_HISTORY = renderStatement(listHistorySql);

/**
 * The history read with the conversation's touch in front, as a data-modifying CTE: Postgres
 * runs it to completion whether or not the read refers to it, in the read's snapshot (the read
 * touches no conversations row). `||` on jsonb is a shallow merge done by the server, so
 * concurrent touches never lose a key.
 */
const LIST_HISTORY_TOUCHING = renderStatement((value, qb) => {
  const touch = qb
    .insert(conversations)
    .values({ tenantId: value("tenantId"), conversationId: value("conversationId"), meta: value("meta") })
    .onConflictDoUpdate({
      target: [conversations.tenantId, conversations.conversationId],
      set: { meta: sql`${conversations.meta} || excluded.meta`, updatedAt: sql`now()` },
    })
    .getSQL();
  return sql`with touched as (${touch}) ${listHistorySql(value, qb)}`;
});
const readHistory = rowReader(getTableColumns(history));

/** The record's columns (the id only orders). drizzle sends a limit as a parameter, hence `limit` (always 1). */
const { id: _checkpointId, ...checkpointRecord } = getTableColumns(checkpoints);
const LATEST_CHECKPOINT = renderStatement((value, qb) =>
  qb
    .select(checkpointRecord)
    .from(checkpoints)
    .where(and(eq(checkpoints.tenantId, value("tenantId")), eq(checkpoints.conversationId, value("conversationId"))))
    .orderBy(desc(checkpoints.id))
    .limit(sql.placeholder("limit"))
    .getSQL(),
);
const readCheckpoint = rowReader(checkpointRecord);

/**
 * A checkpoint save: unfenced, a plain insert; fenced, `INSERT … SELECT … WHERE` the fence holds
 * (README "run_fences"), returning a row only when it wrote. The fence's ids are values of their
 * own (`fence:*`), as they were separate parameters before.
 */
const SAVE_CHECKPOINT = {
  unfenced: renderStatement((value, qb) =>
    qb
      .insert(checkpoints)
      .values({ tenantId: value("tenantId"), conversationId: value("conversationId"), requestId: value("checkpoint:requestId"), generation: value("checkpoint:generation"), state: value("checkpoint:state") })
      .getSQL(),
  ),
  fenced: renderStatement((value) => {
    const holds = fenceHolds(value("tenantId"), { requestId: value("fence:requestId"), generation: value("fence:generation"), epoch: value("fence:epoch") });
    return sql`${insertCheckpointWhere(value, holds)} returning 1`;
  }),
};

/** The checkpoint's insert when `holds` (an append's `checkpoint_saved`, the fenced save). */
function insertCheckpointWhere(value: (name: string) => SQL, holds: SQL): SQL {
  const columns = columnList([checkpoints.tenantId, checkpoints.conversationId, checkpoints.requestId, checkpoints.generation, checkpoints.state]);
  return sql`insert into ${checkpoints} (${columns}) select ${value("tenantId")}, ${value("conversationId")}, ${value("checkpoint:requestId")}, ${value("checkpoint:generation")}::integer, ${value("checkpoint:state")}::bytea where ${holds}`;
}

/** The named values of a checkpoint beside its tenant and conversation (SAVE_CHECKPOINT, an append's `checkpoint_saved`). */
function checkpointValues(c: NewCheckpoint): Record<string, unknown> {
  return {
    "checkpoint:requestId": driverValue(checkpoints.requestId, c.requestId),
    "checkpoint:generation": driverValue(checkpoints.generation, c.generation),
    "checkpoint:state": driverValue(checkpoints.state, c.state),
  };
}

/**
 * Any number of blobs in one statement of one text: ids and bytes as two arrays of hex, unnested
 * in step and decoded by the server. Hex rather than bytea[] because PGlite serialises a bytea
 * parameter byte by byte in JavaScript; `Buffer#toString("hex")` is native. ON CONFLICT DO
 * NOTHING without a target, as before: a stored blob or a repeat within the put is skipped.
 */
const putBlobsSql = (value: (name: string) => SQL) => {
  const columns = columnList([blobs.tenantId, blobs.blobId, blobs.data]);
  return sql`insert into ${blobs} (${columns})
    select ${value("tenantId")}::text, decode(b.id, 'hex'), decode(b.data, 'hex')
    from unnest(${value("ids")}::text[], ${value("data")}::text[]) as b(id, data)
    on conflict do nothing`;
};
const PUT_BLOBS = renderStatement(putBlobsSql);

/**
 * Any number of blobs read by one statement: the ids as one array of hex, decoded by the server
 * (as PUT_BLOBS sends them, for the same reason), matched on the primary key.
 */
const GET_BLOBS = renderStatement((value) => {
  const columns = columnList([blobs.blobId, blobs.data]);
  return sql`select ${columns} from ${blobs}
    where ${blobs.tenantId} = ${value("tenantId")}
      and ${blobs.blobId} = any(array(select decode(x, 'hex') from unnest(${value("ids")}::text[]) as x))`;
});
const readBlob = rowReader({ blobId: blobs.blobId, data: blobs.data });

/** The named values of the blobs' insert (PUT_BLOBS, and an append's `blobs_put`). */
function blobValues(tenantId: string, puts: readonly BlobPut[]): Record<string, unknown> {
  return { tenantId: driverValue(blobs.tenantId, tenantId), ids: puts.map((b) => hex(b.id)), data: puts.map((b) => hex(b.data)) };
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/** Tries of one append that lost a dedupe race (each loss means another appender committed the same entries). */
const APPEND_ATTEMPTS = 4;

/** An appended row as the raw statement returns it (the history columns by name, decoded by `readHistory`). */
interface RawHistoryRow {
  touched: number;
  tenant_id: string | null;
  request_id: string;
  generation: number;
  dedupe_key: string | null;
}

/**
 * One append as one statement (data-modifying CTEs, atomic by itself):
 *  - `stored`: rows already stored under the entries' dedupe identities (a takeover's re-append);
 *  - `fresh`: the entries to insert, numbered in input order (a repeated identity in the batch once);
 *  - `touched`: the conversation upsert, which takes the row's lock and raises `next_seq` by the
 *    fresh count. ON CONFLICT DO UPDATE works on the latest committed row even when the
 *    statement's snapshot is older, so concurrent appenders queue on the lock and each gets the
 *    range the previous one left: seqs stay contiguous. The greater of `next_seq` and the stored
 *    max(seq) + 1 is the base, so rows written without the counter are never overwritten. A fenced
 *    append inserts the row only while its fence holds (the fence row share-locked until commit):
 *    no row means a newer claim, and nothing is written;
 *  - `ins`: the fresh rows at base + their number;
 *  - `blobs_put` (with blobs): PUT_BLOBS's insert, run to completion whatever the rest did;
 *  - `checkpoint_saved` (with a checkpoint): the checkpoint's insert, only while the fence holds
 *    (as a fenced `saveCheckpoint`), so a refused append saves no checkpoint either.
 * Rendered once per shape (fenced or not, with blobs or not, with a checkpoint or not; db.ts
 * `renderStatement`).
 */
function appendStatement(fenced: boolean, withBlobs: boolean, withCheckpoint: boolean): RenderedStatement {
  return renderStatement((value) => {
    const [tenantId, conversationId] = [value("tenantId"), value("conversationId")];
    const sameIdentity = (a: string, b: string) =>
      sql.raw(`${a}.dedupe_key = ${b}.dedupe_key and ${a}.request_id = ${b}.request_id and ${a}.generation = ${b}.generation`);
    const holds = fenced ? fenceHolds(tenantId, { requestId: value("requestId"), generation: value("generation"), epoch: value("epoch") }) : sql`true`;
    const historyColumns = columnList([history.tenantId, history.conversationId, history.seq, history.requestId, history.generation, history.turn, history.kind, history.body, history.dedupeKey, history.interrupted]);
    const conversationKey = columnList([conversations.tenantId, conversations.conversationId]);
    return sql`
      with ${withBlobs ? sql`blobs_put as (${putBlobsSql(value)}),` : sql``}
      ${withCheckpoint ? sql`checkpoint_saved as (${insertCheckpointWhere(value, holds)}),` : sql``}
      input as (
        select * from jsonb_to_recordset(${value("input")}::jsonb)
          as i(ord int, request_id text, generation int, turn int, kind text, body jsonb, dedupe_key text, interrupted boolean)
      ),
      stored as (
        select h.* from ${history} h
        where h.${columnName(history.tenantId)} = ${tenantId} and h.${columnName(history.conversationId)} = ${conversationId} and h.${columnName(history.dedupeKey)} is not null
          and exists (select 1 from input i where ${sameIdentity("i", "h")})
      ),
      fresh as (
        select i.*, (row_number() over (order by i.ord))::int as n from input i
        where not exists (select 1 from stored h where ${sameIdentity("i", "h")})
          and not exists (select 1 from input j where j.ord < i.ord and ${sameIdentity("j", "i")})
      ),
      counted as (select count(*)::int as n from fresh),
      last as (select coalesce(max(${history.seq}), -1) + 1 as next from ${history} where ${history.tenantId} = ${tenantId} and ${history.conversationId} = ${conversationId}),
      touched as (
        insert into ${conversations} (${conversationKey}, ${columnName(conversations.nextSeq)})
        select ${tenantId}, ${conversationId}, last.next + counted.n from last, counted where ${holds}
        on conflict (${conversationKey}) do update set ${columnName(conversations.updatedAt)} = now(),
          ${columnName(conversations.nextSeq)} = greatest(${conversations}.${columnName(conversations.nextSeq)} + (select n from counted), excluded.${columnName(conversations.nextSeq)})
        returning ${columnName(conversations.nextSeq)} as next_seq
      ),
      ins as (
        insert into ${history} (${historyColumns})
        select ${tenantId}, ${conversationId}, t.next_seq - c.n + f.n - 1, f.request_id, f.generation, f.turn, f.kind, f.body, f.dedupe_key, f.interrupted
        from fresh f, touched t, counted c
        returning *
      )
      select (select count(*) from touched)::int as touched, r.*
      from (select 1) one left join (select * from ins union all select * from stored) r on true`;
  });
}

/** Every shape of the append, indexed by `appendShape`. */
const APPEND_STATEMENTS: readonly RenderedStatement[] = Array.from({ length: 8 }, (_, shape) =>
  appendStatement((shape & 1) !== 0, (shape & 2) !== 0, (shape & 4) !== 0),
);
const appendShape = (fenced: boolean, withBlobs: boolean, withCheckpoint: boolean): number =>
  (fenced ? 1 : 0) | (withBlobs ? 2 : 0) | (withCheckpoint ? 4 : 0);

/** One try of an append; returns each entry's row in input order (a deduplicated entry gets its earlier row). */
async function appendOnce(
  query: OpenedDatabase["query"],
  tenantId: string,
  conversationId: string,
  entries: readonly NewHistoryEntry[],
  fence: RunFence | undefined,
  alongside: AppendAlongside,
): Promise<HistoryEntry[]> {
  const input = entries.map((e, ord) => ({
    ord,
    request_id: e.requestId,
    generation: e.generation,
    turn: e.turn,
    kind: e.kind,
    body: e.body,
    dedupe_key: dedupeKeyOf(e),
    interrupted: e.interrupted ?? false,
  }));
  const puts = alongside.blobs ?? [];
  const checkpoint = alongside.checkpoint;
  const statement = APPEND_STATEMENTS[appendShape(fence !== undefined, puts.length > 0, checkpoint !== undefined)]!;
  const values = {
    ...(puts.length === 0 ? {} : blobValues(tenantId, puts)),
    ...(checkpoint === undefined ? {} : checkpointValues(checkpoint)),
    tenantId,
    conversationId,
    input: JSON.stringify(input),
    ...fence,
  };
  const result = await query(statement.text, bind(statement, values));
  const rows = rowsOf(result) as RawHistoryRow[];
  if (rows[0]?.touched !== 1) {
    if (fence !== undefined) throw fencedError(fence);
    throw new Error("appendHistory: the conversation upsert returned no row");
  }
  const byIdentity = new Map<string, HistoryEntry>();
  const unkeyed: HistoryEntry[] = [];
  for (const r of rows) {
    if (r.tenant_id === null) continue; // the left join's empty row: nothing inserted or stored
    const entry = toHistoryEntry(readHistory(r));
    if (r.dedupe_key === null) unkeyed.push(entry);
    else byIdentity.set(dedupeIdentity(r.request_id, r.generation, r.dedupe_key), entry);
  }
  // Unkeyed entries are always inserted, in input order, so by seq they line up with the input.
  unkeyed.sort((a, b) => a.seq - b.seq);
  let next = 0;
  return input.map((e) => {
    const row = e.dedupe_key === null ? unkeyed[next++] : byIdentity.get(dedupeIdentity(e.request_id, e.generation, e.dedupe_key));
    if (row === undefined) throw new Error(`appendHistory: entry ${e.ord} has no row after the append`);
    return row;
  });
}

function toHistoryEntry(r: typeof history.$inferSelect): HistoryEntry {
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
