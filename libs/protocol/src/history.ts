import type { HistoryRecord } from "./run-types.js";

/**
 * What makes a history append idempotent (docs/architecture.md "History"): the entry's kind,
 * what it belongs to (model call, tool call, injection, action), the attempt and its place in
 * the batch. A new owner re-appending what the old one stored writes nothing twice.
 */
export function historyDedupeKey(e: HistoryRecord, index: number): string {
  const b = e.body;
  return `${e.kind}:${String(b.modelCallId ?? b.toolCallId ?? b.injectionId ?? b.action ?? "user")}:${String(b.attempt ?? 0)}:${index}`;
}
