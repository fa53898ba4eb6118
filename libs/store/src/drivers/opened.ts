import type { MigrationConfig } from "drizzle-orm/migrator";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";

/** A migrated database, ready for the repository: the driver-neutral handle both drivers return. */
export interface OpenedDatabase {
  db: PgDatabase<PgQueryResultHKT>;
  migrationConfig: Required<MigrationConfig>;
  /**
   * Runs SQL text with positional parameters ($1, $2 …) on the driver's own client, for the
   * statements rendered once per process (db.ts `renderStatement`); rows as the driver parses them,
   * except that date/time types (and numeric[]) stay text, as drizzle's own sessions ask of both
   * drivers: a rendered read then decodes them with the column's `mapFromDriverValue`, exactly
   * as drizzle did (db.ts `rowReader`). `text` is one of those fixed statements, never built
   * per call: both drivers prepare each text once (`statementNames`) and then only bind and run it.
   */
  query(text: string, params: readonly unknown[]): Promise<{ rows: unknown[] }>;
  /** Releases the connection(s); the handle is unusable afterwards. */
  close(): Promise<void>;
}

/**
 * The type oids drizzle's node-postgres and PGlite sessions leave as text (drizzle-orm 0.45
 * `rawQueryConfig`): timestamptz, timestamp, date, interval and the arrays numeric[],
 * timestamp[], timestamptz[], interval[], date[].
 */
export const TEXT_RESULT_OIDS: readonly number[] = [1184, 1114, 1082, 1186, 1231, 1115, 1185, 1187, 1182];

/** The result parser of those types: the text as the server sent it. */
export const asText = (value: string): string => value;

/**
 * A name per statement text, for the server's prepared statements (the parse and plan of a
 * rendered statement's CTEs cost more than running it). The texts are the store's fixed set,
 * so the map stays small; one that grew past `max` would mean a caller building text per call.
 */
export function statementNames(max = 256): (text: string) => string {
  const names = new Map<string, string>();
  return (text) => {
    let name = names.get(text);
    if (name === undefined) {
      if (names.size >= max) throw new Error(`more than ${max} distinct rendered statements: query() takes fixed statement texts only`);
      name = `byok_s${names.size}`;
      names.set(text, name);
    }
    return name;
  };
}
