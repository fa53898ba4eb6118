/**
 * Where a run writes content under its content mode (retention and ghost mode). The engine
 * asks its content policy once per generation, after it knows the run's principal, and then
 * writes history, blobs and the conversation row through the Store `contentStore` returns.
 *
 * - `store`: everything goes to the store (retention `full`).
 * - `ephemeral`: no conversation, history, checkpoint or blob row is written; the run keeps
 *   its own history and blobs in memory (ghost mode, retention `none`). Reads still see the
 *   conversation's stored rows from earlier, non-ephemeral turns.
 * - `ephemeral_keep_conversation`: as `ephemeral`, but the conversation row (ids and
 *   timestamps, no content) is written (retention `metadata`).
 *
 * The history an ephemeral run holds in memory is what its prompt is rebuilt from, so it
 * travels in the run's takeover snapshot (Redis, fenced, expiring with the generation; never
 * the store): a new owner adopts it and re-runs a cut pass with the same messages.
 *
 * The ephemeral Store keeps the Store contract (libs/store/test/contract.ts runs on it) for
 * what it holds: history in order per tenant and conversation, its seqs continuing the
 * conversation's stored rows (counted once, when the run first touches the conversation),
 * idempotent re-appends, interrupted marks, blobs checked and kept per tenant. By design it
 * writes no checkpoint, in `ephemeral` mode no conversation row, and takes no fence (the run's
 * memory is its own; what leaves it, the snapshot, is fenced on the bus).
 */
import { appendTarget, assertAlongside, assertBlobId } from "../checks.js";
import { dedupeIdentity, dedupeKeyOf } from "../dedupe.js";
import type { BlobPut, HistoryEntry, NewHistoryEntry, Store } from "../types.js";

export type ContentMode = "store" | "ephemeral" | "ephemeral_keep_conversation";

/** History an ephemeral run holds only in memory, in append order. */
export interface HeldContent {
  history: NewHistoryEntry[];
}

export interface RunContent {
  /** The Store the run writes content through. */
  store: Store;
  /** Ephemeral modes only: what the run holds in memory, for its snapshot, and a takeover's adoption of it. */
  held?: {
    current(): HeldContent;
    adopt(held: HeldContent): void;
  };
}

/** One conversation's held history: `rows[i].seq` is `i`; readers see `base + i`. */
interface HeldConversation {
  rows: HistoryEntry[];
  /** (requestId, generation, dedupeKey) → position, for idempotent re-appends. */
  seen: Map<string, number>;
  /** The stored rows' next seq, read once. */
  base: Promise<number> | undefined;
}

/** Where a run writes content under `mode`. */
export function contentStore(store: Store, mode: ContentMode): RunContent {
  if (mode === "store") return { store };
  let conversations = new Map<string, HeldConversation>();
  const blobs = new Map<string, Uint8Array>();
  const blobKey = (tenantId: string, id: Uint8Array) => `${tenantId}\u0000${Buffer.from(id).toString("hex")}`;
  const held = (tenantId: string, conversationId: string): HeldConversation => {
    const key = `${tenantId}\u0000${conversationId}`;
    let c = conversations.get(key);
    if (!c) conversations.set(key, (c = { rows: [], seen: new Map(), base: undefined }));
    return c;
  };
  const baseOf = (c: HeldConversation, tenantId: string, conversationId: string): Promise<number> =>
    (c.base ??= store.listHistory(tenantId, conversationId).then(nextSeq, (err: unknown) => {
      c.base = undefined;
      throw err;
    }));
  const seen = (row: HistoryEntry, base: number): HistoryEntry => ({ ...row, seq: base + row.seq });
  const hold = (c: HeldConversation, e: NewHistoryEntry): HistoryEntry | undefined => {
    const key = dedupeKeyOf(e);
    const identity = key === null ? undefined : dedupeIdentity(e.requestId, e.generation, key);
    const known = identity === undefined ? undefined : c.seen.get(identity);
    if (known !== undefined) return c.rows[known];
    const row: HistoryEntry = { ...e, seq: c.rows.length, createdAt: new Date() };
    c.rows.push(row);
    if (identity !== undefined) c.seen.set(identity, row.seq);
    return row;
  };

  const holdBlobs = (tenantId: string, puts: readonly BlobPut[]) => {
    for (const b of puts) assertBlobId(b.id, b.data);
    for (const b of puts) blobs.set(blobKey(tenantId, b.id), b.data);
  };

  const ephemeral: Store = {
    ...store,
    // Its checkpoint is not kept, as saveCheckpoint keeps none.
    async appendHistory(entries: NewHistoryEntry[], _fence, alongside = {}): Promise<HistoryEntry[]> {
      const target = appendTarget(entries);
      if (target === undefined) return [];
      assertAlongside(target, alongside);
      holdBlobs(target.tenantId, alongside.blobs ?? []);
      const c = held(target.tenantId, target.conversationId);
      const base = await baseOf(c, target.tenantId, target.conversationId);
      return entries.map((e) => seen(hold(c, e)!, base));
    },
    async listHistory(tenantId, conversationId, touch): Promise<HistoryEntry[]> {
      const c = held(tenantId, conversationId);
      // The conversation's row (its touch) is stored only when the tenant keeps conversations.
      const stored = await store.listHistory(tenantId, conversationId, mode === "ephemeral_keep_conversation" ? touch : undefined);
      c.base ??= Promise.resolve(nextSeq(stored));
      const base = await c.base;
      return [...stored, ...c.rows.map((r) => seen(r, base))];
    },
    async markInterrupted(tenantId, conversationId, seqs): Promise<void> {
      const c = held(tenantId, conversationId);
      if (c.rows.length === 0) return;
      const base = await baseOf(c, tenantId, conversationId);
      for (const r of c.rows) if (seqs.includes(base + r.seq)) r.interrupted = true;
    },
    // No checkpoint of this run is kept; a stored one of an earlier, non-ephemeral turn is still read.
    async saveCheckpoint(): Promise<void> {},
    async putBlobs(tenantId, puts): Promise<void> {
      holdBlobs(tenantId, puts);
    },
    // Held blobs first; the rest from the database, in one read.
    async getBlobs(tenantId, blobIds): Promise<(Uint8Array | undefined)[]> {
      const out = blobIds.map((id) => blobs.get(blobKey(tenantId, id)));
      const missing = blobIds.filter((_, i) => out[i] === undefined);
      if (missing.length === 0) return out;
      const stored = await store.getBlobs(tenantId, missing);
      let next = 0;
      return out.map((held) => held ?? stored[next++]);
    },
  };
  return {
    store: ephemeral,
    held: {
      current: () => ({ history: [...conversations.values()].flatMap((c) => c.rows.map(({ seq: _seq, createdAt: _at, ...e }) => e)) }),
      adopt(h) {
        conversations = new Map();
        for (const e of h.history) hold(held(e.tenantId, e.conversationId), e);
      },
    },
  };
}

function nextSeq(rows: HistoryEntry[]): number {
  return rows.reduce((m, r) => Math.max(m, r.seq + 1), 0);
}
