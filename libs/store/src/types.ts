/**
 * The gateway's durable store: one drizzle-orm schema, two drivers (PGlite for embedded
 * mode, node-postgres for distributed mode), one contract test suite.
 *
 * Everything is scoped by tenant: no method returns a row of another tenant.
 * Tenancy and metering live in sibling repositories of GatewayStore (tenancy/types.ts,
 * metering/types.ts).
 */
import type { AuditRepository, LedgerRepository, PriceRepository } from "./metering/types.js";
import type { ApiKeyRepository, CredentialRepository, RouteRepository, TenantRepository } from "./tenancy/types.js";

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

/**
 * Who writes for a run: its request, generation and the fencing epoch its owner got from the
 * bus claim. A write carrying a fence whose epoch is older than the generation's latest
 * `claimRun` is refused (StoreError "fenced") and writes nothing.
 */
export interface RunFence {
  requestId: string;
  generation: number;
  epoch: number;
}

/** A checkpoint to save (the store stamps `createdAt`). */
export type NewCheckpoint = Omit<CheckpointRecord, "createdAt">;

/** What a history append also writes, in its statement (`Store.appendHistory`). */
export interface AppendAlongside {
  blobs?: readonly BlobPut[];
  checkpoint?: NewCheckpoint;
}

export interface Store {
  /**
   * Records a new owner's epoch for the generation (the bus claim it just won). From then on,
   * writes fenced with an older epoch are refused. False when a newer epoch was already
   * recorded (this owner is stale).
   */
  claimRun(tenantId: string, fence: RunFence): Promise<boolean>;

  getConversation(tenantId: string, conversationId: string): Promise<ConversationRecord | undefined>;

  /**
   * Appends entries atomically, in order, after the current last entry; returns them with seq.
   * Idempotency: an entry whose `(requestId, generation, dedupeKey)` was appended before is
   * not appended twice (dedupeKey is body.dedupeKey when present) — lets a takeover re-append safely.
   *
   * Precisely: all entries must share one tenantId and conversationId (else StoreError
   * "invalid_argument", nothing appended). The conversation is created if missing. New entries
   * get contiguous seqs after the last stored one, even with concurrent appenders (they are
   * serialised per conversation). The result has one entry per input, in input order; an input
   * that was deduplicated comes back as the entry stored earlier, with its original seq.
   * body.dedupeKey counts only when it is a non-empty string.
   *
   * `alongside` is written by the same statement, atomically with the entries (docs/architecture.md
   * "Store statements of a turn"): its `blobs` (of the entries' tenant) as `putBlobs` stores them
   * (checked first: a bad id stores nothing and appends nothing), so a run's start writes its
   * user entry and its checkpoint's blobs in one round trip; its `checkpoint` (of the entries'
   * conversation, else StoreError "invalid_argument") as `saveCheckpoint` saves it, under the
   * same fence, so a turn's end writes the assistant's entry, the blobs and the final checkpoint
   * in one. With no entries nothing of it is stored.
   */
  appendHistory(entries: NewHistoryEntry[], fence?: RunFence, alongside?: AppendAlongside): Promise<HistoryEntry[]>;
  /**
   * Entries in seq order. With `touch`, the same statement also creates the conversation if
   * missing, merges `touch` into its meta and bumps updatedAt: a pass's start reads its history
   * and marks its conversation in one round trip. The merge is shallow and done by the database
   * (top-level keys of `touch` replace stored ones, other stored keys stay), so concurrent
   * touches never lose each other's keys.
   */
  listHistory(tenantId: string, conversationId: string, touch?: Record<string, unknown>): Promise<HistoryEntry[]>;
  /** Marks the given entries interrupted (a cut provider pass). Seqs not in the conversation are ignored. */
  markInterrupted(tenantId: string, conversationId: string, seqs: number[], fence?: RunFence): Promise<void>;

  saveCheckpoint(c: NewCheckpoint, fence?: RunFence): Promise<void>;
  /** The checkpoint saved last for the conversation (save order, not createdAt). */
  latestCheckpoint(tenantId: string, conversationId: string): Promise<CheckpointRecord | undefined>;

  /**
   * Content-addressed blobs: id = SHA-256 of the bytes (verified on put). Several at once are
   * one statement (a checkpoint's blobs). A mismatching or non-32-byte id throws StoreError
   * "blob_hash_mismatch" and stores none of them; putting the same blob again is a no-op.
   */
  putBlobs(tenantId: string, blobs: readonly BlobPut[]): Promise<void>;
  /**
   * The stored bytes of each id, in the order asked (undefined where the tenant has none), read
   * by one statement however many there are: a run resolves its client's turns, or a
   * checkpoint's references, in one round trip (docs/architecture.md "Store statements of a
   * turn"). The bytes are as stored; a caller that trusts them checks them against their id.
   */
  getBlobs(tenantId: string, blobIds: readonly Uint8Array[]): Promise<(Uint8Array | undefined)[]>;

  /** Applied migration names, in order (for health and tests). */
  migrations(): Promise<string[]>;
  close(): Promise<void>;
}

/** One blob to store: its id (SHA-256 of `data`) and bytes. */
export interface BlobPut {
  id: Uint8Array;
  data: Uint8Array;
}

/**
 * What createStore returns: the conversation Store plus the tenancy and metering
 * repositories, all over the same connection(s) and migrations.
 */
export interface GatewayStore extends Store {
  tenants: TenantRepository;
  apiKeys: ApiKeyRepository;
  routes: RouteRepository;
  credentials: CredentialRepository;
  prices: PriceRepository;
  ledger: LedgerRepository;
  audit: AuditRepository;
}
