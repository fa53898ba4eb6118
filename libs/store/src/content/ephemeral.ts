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
 */
import type { ConversationRecord, HistoryEntry, NewHistoryEntry, Store } from "../types.js";

export type ContentMode = "store" | "ephemeral" | "ephemeral_keep_conversation";

/** History an ephemeral run holds only in memory, in append order (seq = position). */
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

/** Where a run writes content under `mode`. */
export function contentStore(store: Store, mode: ContentMode): RunContent {
  if (mode === "store") return { store };
  let history: HistoryEntry[] = [];
  let dedupe = new Set<string>();
  const blobs = new Map<string, Uint8Array>();
  const hex = (id: Uint8Array) => Buffer.from(id).toString("hex");
  const dedupeKey = (e: NewHistoryEntry) => {
    const d = typeof e.body === "object" && e.body !== null ? (e.body as { dedupeKey?: unknown }).dedupeKey : undefined;
    return typeof d === "string" ? `${e.conversationId}\u0000${e.requestId}\u0000${e.generation}\u0000${d}` : undefined;
  };
  const ephemeral: Store = {
    ...store,
    async upsertConversation(tenantId, conversationId, meta): Promise<ConversationRecord> {
      if (mode === "ephemeral_keep_conversation") return store.upsertConversation(tenantId, conversationId, meta);
      const now = new Date();
      return { tenantId, conversationId, meta: {}, createdAt: now, updatedAt: now };
    },
    async appendHistory(entries: NewHistoryEntry[]): Promise<HistoryEntry[]> {
      const out: HistoryEntry[] = [];
      for (const e of entries) {
        const key = dedupeKey(e);
        if (key !== undefined && dedupe.has(key)) continue;
        if (key !== undefined) dedupe.add(key);
        const row: HistoryEntry = { ...e, seq: history.length, createdAt: new Date() };
        history.push(row);
        out.push(row);
      }
      return out;
    },
    async listHistory(tenantId, conversationId): Promise<HistoryEntry[]> {
      const stored = await store.listHistory(tenantId, conversationId);
      const base = nextSeq(stored);
      const mine = history.filter((r) => r.tenantId === tenantId && r.conversationId === conversationId).map((r) => ({ ...r, seq: base + r.seq }));
      return [...stored, ...mine];
    },
    async markInterrupted(tenantId, conversationId, seqs): Promise<void> {
      const base = nextSeq(await store.listHistory(tenantId, conversationId));
      for (const r of history) if (r.conversationId === conversationId && seqs.includes(base + r.seq)) r.interrupted = true;
    },
    // No checkpoint of this run is kept; a stored one of an earlier, non-ephemeral turn is still read.
    async saveCheckpoint(): Promise<void> {},
    async putBlob(_tenantId, blobId, data): Promise<void> {
      blobs.set(hex(blobId), data);
    },
    async getBlob(tenantId, blobId): Promise<Uint8Array | undefined> {
      return blobs.get(hex(blobId)) ?? store.getBlob(tenantId, blobId);
    },
  };
  return {
    store: ephemeral,
    held: {
      current: () => ({ history: history.map(({ seq: _seq, createdAt: _at, ...e }) => e) }),
      adopt(held) {
        const now = new Date();
        history = held.history.map((e, seq) => ({ ...e, seq, createdAt: now }));
        dedupe = new Set(held.history.map(dedupeKey).filter((k): k is string => k !== undefined));
      },
    },
  };
}

function nextSeq(rows: HistoryEntry[]): number {
  return rows.reduce((m, r) => Math.max(m, r.seq + 1), 0);
}
