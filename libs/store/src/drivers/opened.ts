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
   * as drizzle did (db.ts `rowReader`).
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
