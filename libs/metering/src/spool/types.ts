import type { LedgerEntry } from "@byok/store";

/**
 * A ledger row the store could not take because the database was unreachable, with the time
 * the attempt was settled (the row's `created_at`, so it lands on the day it belongs to).
 */
export interface HeldLedgerRow {
  entry: LedgerEntry;
  /** ISO 8601. */
  at: string;
}

/** A held row as `peek` returns it: `forget` removes exactly this row from the spool. */
export interface PeekedLedgerRow {
  row: HeldLedgerRow;
  forget(): Promise<void>;
}

/**
 * Where the run meter keeps ledger rows during a database outage until they are written
 * (docs/reliability.md "Usage during a Postgres outage"): in Redis in distributed mode (every
 * worker drains it; a row survives the process that held it), in memory in embedded mode.
 * Bounded: past `maxRows` a row is not kept (`hold` answers false and the caller reports it lost).
 */
export interface LedgerSpool {
  hold(row: HeldLedgerRow): Promise<boolean>;
  /** Up to `max` held rows, oldest first. Empty once closed. */
  peek(max: number): Promise<PeekedLedgerRow[]>;
  size(): Promise<number>;
  readonly closed: boolean;
  close(): Promise<void>;
}
