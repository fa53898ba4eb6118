import type { MigrationConfig } from "drizzle-orm/migrator";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";

/** A migrated database, ready for the repository: the driver-neutral handle both drivers return. */
export interface OpenedDatabase {
  db: PgDatabase<PgQueryResultHKT>;
  migrationConfig: Required<MigrationConfig>;
  /**
   * Runs SQL text with positional parameters ($1, $2 …) on the driver's own client, for the
   * statements rendered once per process (db.ts `renderStatement`); rows as the driver parses them.
   */
  query(text: string, params: readonly unknown[]): Promise<{ rows: unknown[] }>;
  /** Releases the connection(s); the handle is unusable afterwards. */
  close(): Promise<void>;
}
