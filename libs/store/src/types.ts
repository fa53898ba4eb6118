/**
 * The gateway's durable store: one drizzle-orm schema, two drivers (PGlite for embedded
 * mode, node-postgres for distributed mode), one contract test suite.
 *
 * Everything is scoped by tenant: no method returns a row of another tenant.
 * Later issues add tables (tenants, keys, ledger, ...) as new migrations and new repositories.
 */

/** One entry of a conversation's history as the engine replays it to providers. */
export interface HistoryEntry {
  tenantId: string;
  conversationId: string;
  /** Position in the conversation, assigned by the store on append (0, 1, 2, ...). */
  seq: number;
  /** Request and run generation that produced the entry. */
  requestId: string;
  generation: number;
  /** Turn index within the conversation. */
  turn: number;
  /** user | assistant | tool | summary | notice ... ; body is the engine's JSON. */
  kind: string;
  body: unknown;
  /** Output the client saw from a provider pass that was cut (retry, takeover). Left out of prompts. */
  interrupted: boolean;
  createdAt: Date;
}

export type NewHistoryEntry = Omit<HistoryEntry, "seq" | "createdAt">;

export interface ConversationRecord {
  tenantId: string;
  conversationId: string;
  createdAt: Date;
  updatedAt: Date;
  /** Engine-owned JSON (mode, model, summary pointers ...). */
  meta: Record<string, unknown>;
}

export interface CheckpointRecord {
  tenantId: string;
  conversationId: string;
  requestId: string;
  generation: number;
  /** Serialized agent.v1.ConversationStateStructure. */
  state: Uint8Array;
  createdAt: Date;
}

export interface Store {
  /** Creates the conversation if missing; merges `meta` into the stored meta. Returns the record. */
  upsertConversation(tenantId: string, conversationId: string, meta?: Record<string, unknown>): Promise<ConversationRecord>;
  getConversation(tenantId: string, conversationId: string): Promise<ConversationRecord | undefined>;

  /**
   * Appends entries atomically, in order, after the current last entry; returns them with seq.
   * Idempotency: an entry whose `(requestId, generation, dedupeKey)` was appended before is
   * not appended twice (dedupeKey is body.dedupeKey when present) — lets a takeover re-append safely.
   */
  appendHistory(entries: NewHistoryEntry[]): Promise<HistoryEntry[]>;
  /** Entries in seq order. */
  listHistory(tenantId: string, conversationId: string): Promise<HistoryEntry[]>;
  /** Marks the given entries interrupted (a cut provider pass). */
  markInterrupted(tenantId: string, conversationId: string, seqs: number[]): Promise<void>;

  saveCheckpoint(c: Omit<CheckpointRecord, "createdAt">): Promise<void>;
  latestCheckpoint(tenantId: string, conversationId: string): Promise<CheckpointRecord | undefined>;

  /** Content-addressed blobs: id = SHA-256 of the bytes (verified on put). */
  putBlob(tenantId: string, blobId: Uint8Array, data: Uint8Array): Promise<void>;
  getBlob(tenantId: string, blobId: Uint8Array): Promise<Uint8Array | undefined>;

  /** Applied migration names, in order (for health and tests). */
  migrations(): Promise<string[]>;
  close(): Promise<void>;
}
