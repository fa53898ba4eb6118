/**
 * The store's closed error catalogue. Every error the store throws on purpose is a
 * StoreError with one of these codes; anything else (connection loss, a bug) propagates
 * as the driver raised it.
 */
export type StoreErrorCode =
  /** putBlobs: blob_id is not the SHA-256 of the data (or not 32 bytes). Permanent: do not retry. */
  | "blob_hash_mismatch"
  /** A caller broke a documented precondition (e.g. one appendHistory call spanning two conversations). */
  | "invalid_argument"
  /** A create hit an existing id (tenant, user, external id). */
  | "already_exists"
  /** Credentials were used on a store opened without a key-encryption key. */
  | "no_kek"
  /** A write carried a run epoch older than the run's latest claim: another worker owns the run. Nothing was written. */
  | "fenced";

export class StoreError extends Error {
  readonly code: StoreErrorCode;

  constructor(code: StoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreError";
    this.code = code;
  }
}

/** True when `e` is a StoreError (of `code`, if given). */
export function isStoreError(e: unknown, code?: StoreErrorCode): e is StoreError {
  return e instanceof StoreError && (code === undefined || e.code === code);
}

/** Socket errors and PostgreSQL SQLSTATEs that mean "the database cannot be reached now", not a bad query. */
const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN",
  // connection_exception class, admin/crash shutdown, cannot_connect_now (starting up or in recovery)
  "08000", "08001", "08003", "08004", "08006", "57P01", "57P02", "57P03",
]);
const UNREACHABLE_MESSAGES = /Connection terminated|connection timeout|Client has encountered a connection error|timeout exceeded when trying to connect/i;

/**
 * True when `e` (or an error in its `cause` chain, e.g. under drizzle's query error) says the
 * database could not be reached — down, restarting, connection cut — so the caller answers
 * `unavailable` (retry shortly) instead of `internal`.
 */
export function isStoreUnavailable(e: unknown): boolean {
  for (let err = e, depth = 0; err instanceof Error && depth < 8; err = err.cause, depth++) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && UNREACHABLE_CODES.has(code)) return true;
    if (UNREACHABLE_MESSAGES.test(err.message)) return true;
  }
  return false;
}
