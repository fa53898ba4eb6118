import type { NewHistoryEntry } from "./types.js";

/**
 * The idempotency key of a history entry: `body.dedupeKey` when it is a non-empty string,
 * otherwise none (the entry is always appended).
 */
export function dedupeKeyOf(entry: Pick<NewHistoryEntry, "body">): string | null {
  const { body } = entry;
  if (typeof body !== "object" || body === null || !("dedupeKey" in body)) return null;
  const key = body.dedupeKey;
  return typeof key === "string" && key !== "" ? key : null;
}

/** One string per (requestId, generation, dedupeKey), for matching in memory. */
export function dedupeIdentity(requestId: string, generation: number, dedupeKey: string): string {
  return JSON.stringify([requestId, generation, dedupeKey]);
}
