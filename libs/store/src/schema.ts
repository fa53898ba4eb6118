/**
 * The store's tables, as drizzle-orm definitions. drizzle-kit reads this file to generate
 * migrations (see README.md); the running store reads it to build queries.
 *
 * Tables are declared without a Postgres schema on purpose: generated SQL then names them
 * unqualified, so they land in whatever schema `search_path` selects (per-test isolation,
 * or one schema per deployment). For the same reason there are no foreign keys: drizzle-kit
 * qualifies their targets with `"public".`, which would escape the selected schema.
 * Every table leads with `tenant_id` so every primary key and index is tenant-scoped.
 */
import { sql } from "drizzle-orm";
import {
  bigserial,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";
import { bytea, createdAt } from "./schema/columns.js";

export * from "./schema/tenancy.js";
export * from "./schema/metering.js";

export const conversations = pgTable(
  "conversations",
  {
    tenantId: text("tenant_id").notNull(),
    conversationId: text("conversation_id").notNull(),
    meta: jsonb("meta").$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    // The seq the conversation's next history entry gets. appendHistory raises it in the same
    // statement that takes the row's lock, so concurrent appenders get contiguous seqs without a
    // transaction around a read (see drizzle-store.ts).
    nextSeq: integer("next_seq").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.conversationId] })],
);

export const history = pgTable(
  "history",
  {
    tenantId: text("tenant_id").notNull(),
    conversationId: text("conversation_id").notNull(),
    seq: integer("seq").notNull(),
    requestId: text("request_id").notNull(),
    generation: integer("generation").notNull(),
    turn: integer("turn").notNull(),
    kind: text("kind").notNull(),
    body: jsonb("body").$type<unknown>().notNull(),
    dedupeKey: text("dedupe_key"),
    interrupted: boolean("interrupted").notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.conversationId, t.seq] }),
    // Backstop for appendHistory's idempotency: a takeover re-append can never store twice.
    uniqueIndex("history_dedupe_uq")
      .on(t.tenantId, t.conversationId, t.requestId, t.generation, t.dedupeKey)
      .where(sql`${t.dedupeKey} is not null`),
  ],
);

/**
 * The latest fencing epoch of each run generation (the bus claim), so the database itself
 * refuses writes of a worker that another one took the run over from. Pruned a day after its
 * last claim (a run never lasts that long).
 */
export const runFences = pgTable(
  "run_fences",
  {
    tenantId: text("tenant_id").notNull(),
    requestId: text("request_id").notNull(),
    generation: integer("generation").notNull(),
    epoch: integer("epoch").notNull(),
    claimedAt: timestamp("claimed_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.requestId, t.generation] }), index("run_fences_claimed_idx").on(t.tenantId, t.claimedAt)],
);

export const checkpoints = pgTable(
  "checkpoints",
  {
    // Monotonic per database: "latest" is the highest id, which never ties (unlike created_at).
    id: bigserial("id", { mode: "number" }).primaryKey(),
    tenantId: text("tenant_id").notNull(),
    conversationId: text("conversation_id").notNull(),
    requestId: text("request_id").notNull(),
    generation: integer("generation").notNull(),
    state: bytea("state").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("checkpoints_latest_idx").on(t.tenantId, t.conversationId, t.id.desc())],
);

export const blobs = pgTable(
  "blobs",
  {
    tenantId: text("tenant_id").notNull(),
    /** SHA-256 of `data`, 32 bytes (checked by putBlobs and by a CHECK constraint). */
    blobId: bytea("blob_id").notNull(),
    data: bytea("data").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.blobId] }),
    check("blobs_blob_id_len", sql`octet_length(${t.blobId}) = 32`),
  ],
);
