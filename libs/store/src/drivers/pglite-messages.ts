/**
 * What the embedded store's thread (pglite-host.ts) and the process's side of it (pglite.ts)
 * send each other. Every request carries an `id` its reply repeats. Values cross the thread by
 * structured clone: rows of strings, numbers, booleans, parsed jsonb and Uint8Array (bytea), and
 * parameters of the same kinds; no functions (PGlite's parsers are set on the thread's client).
 */
import type { RowMode } from "@electric-sql/pglite";

export type HostRequest =
  /** Opens (creating if needed) the database at `dataDir`, or an in-memory one; replies its handle. */
  | { id: number; op: "open"; dataDir: string | undefined }
  /** A rendered statement through the thread's prepared statements (opened.ts `query`). */
  | { id: number; op: "prepared"; db: number; text: string; params: readonly unknown[] }
  /** A drizzle query (PGlite `query`), inside transaction `tx` when given. */
  | { id: number; op: "query"; db: number; tx: number | undefined; sql: string; params: readonly unknown[]; rowMode: RowMode }
  /** Starts a transaction and holds PGlite's transaction lock until its `end`; replies the transaction's handle. */
  | { id: number; op: "begin"; db: number }
  /** Commits (or rolls back) transaction `tx` and releases the lock. */
  | { id: number; op: "end"; db: number; tx: number; commit: boolean }
  | { id: number; op: "close"; db: number };

/** An error as it crossed the thread: its name, message and the driver's own fields (PostgreSQL's `code`, `detail`, `constraint` …). */
export interface CrossedError {
  name: string;
  message: string;
  fields: Record<string, string | number | boolean>;
}

export type HostReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: CrossedError };

/** The error's own primitive fields, for the other side to rebuild it with (`crossedError`). */
export function errorToCross(e: unknown): CrossedError {
  if (!(e instanceof Error)) return { name: "Error", message: String(e), fields: {} };
  const fields: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(e)) {
    if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") fields[k] = v;
  }
  return { name: e.name, message: e.message, fields };
}

/** An Error with the crossed error's name, message and fields, and this side's stack. */
export function crossedError(c: CrossedError): Error {
  const e = Object.assign(new Error(c.message), c.fields);
  e.name = c.name;
  return e;
}
