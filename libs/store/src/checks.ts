// Argument checks every Store implementation makes the same way (the database store and the
// ephemeral content store), so both refuse the same input with the same StoreError.
import { hash } from "node:crypto";
import { StoreError } from "./errors.js";
import type { AppendAlongside, NewHistoryEntry } from "./types.js";

/** The one tenant and conversation of an append (undefined: nothing to append); refuses a batch spanning two. */
export function appendTarget(entries: readonly NewHistoryEntry[]): { tenantId: string; conversationId: string } | undefined {
  const first = entries[0];
  if (first === undefined) return undefined;
  const { tenantId, conversationId } = first;
  if (entries.some((e) => e.tenantId !== tenantId || e.conversationId !== conversationId)) {
    throw new StoreError("invalid_argument", "appendHistory: all entries must belong to one tenant and conversation");
  }
  return { tenantId, conversationId };
}

/** Refuses a blob whose id is not the SHA-256 of its data. */
export function assertBlobId(blobId: Uint8Array, data: Uint8Array): void {
  const digest = hash("sha256", data, "buffer");
  if (blobId.length !== digest.length || !digest.equals(blobId)) {
    throw new StoreError("blob_hash_mismatch", "putBlobs: blob id is not the SHA-256 of the data");
  }
}

/** Refuses what an append carries (`Store.appendHistory`) before anything is written: a bad blob id, a checkpoint of another conversation. */
export function assertAlongside(target: { tenantId: string; conversationId: string }, alongside: AppendAlongside): void {
  for (const b of alongside.blobs ?? []) assertBlobId(b.id, b.data);
  const c = alongside.checkpoint;
  if (c !== undefined && (c.tenantId !== target.tenantId || c.conversationId !== target.conversationId)) {
    throw new StoreError("invalid_argument", "appendHistory: the checkpoint must belong to the entries' tenant and conversation");
  }
}
