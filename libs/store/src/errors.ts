/**
 * The store's closed error catalogue. Every error the store throws on purpose is a
 * StoreError with one of these codes; anything else (connection loss, a bug) propagates
 * as the driver raised it.
 */
export type StoreErrorCode =
  /** putBlob: blob_id is not the SHA-256 of the data (or not 32 bytes). Permanent: do not retry. */
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
