import type { RequestRef } from "../types.js";

/**
 * Escapes an id for a BullMQ job id: `%`, `:` and `-` become `%25`, `%3A`, `%2D`. BullMQ
 * refuses `:` in custom ids (it separates key parts), and `-` is the separator of the job id,
 * so escaping it keeps the mapping injective (tenant "a-b" + request "c" never meets tenant
 * "a" + request "b-c").
 */
export function escapeJobIdPart(id: string): string {
  return id.replace(/[%:-]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
}

/**
 * The deterministic id of the run job of one generation: `run-<tenant>-<request>-g<N>`.
 * Deterministic so a retried BidiAppend re-adds the same job harmlessly (BullMQ ignores an add
 * whose id exists); per generation so a finished generation's job never blocks the next one.
 */
export function runJobId(ref: RequestRef, generation: number): string {
  if (!Number.isSafeInteger(generation) || generation < 1) throw new Error(`invalid generation ${generation}`);
  return `run-${escapeJobIdPart(ref.tenantId)}-${escapeJobIdPart(ref.requestId)}-g${generation}`;
}
