import { sql, type SQL } from "drizzle-orm";
import type { AnyPgColumn, PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";

/** The drizzle handle every repository receives (either driver). */
export type Db = PgDatabase<PgQueryResultHKT>;

/** True when `e` (or an error in its cause chain) is a Postgres unique violation (23505). */
export function isUniqueViolation(e: unknown): boolean {
  for (let cur: unknown = e, depth = 0; cur !== undefined && cur !== null && depth < 5; depth++) {
    if (typeof cur === "object" && "code" in cur && cur.code === "23505") return true;
    cur = typeof cur === "object" && "cause" in cur ? cur.cause : undefined;
  }
  return false;
}

/** The rows of a raw statement's result (both drivers answer `{ rows }`). */
export function rowsOf(result: unknown): unknown[] {
  const rows = (result as { rows?: unknown }).rows;
  return Array.isArray(rows) ? rows : [];
}

/** Unqualified column names for a raw statement's column or conflict list: `"a", "b"`. */
export function columnList(cols: readonly AnyPgColumn[]): SQL {
  return sql.join(cols.map((col) => sql.identifier(col.name)), sql`, `);
}
