import type { MigrationConfig } from "drizzle-orm/migrator";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";

/** A migrated database, ready for the repository: the driver-neutral handle both drivers return. */
export interface OpenedDatabase {
  db: PgDatabase<PgQueryResultHKT>;
  migrationConfig: Required<MigrationConfig>;
  /** Releases the connection(s); the handle is unusable afterwards. */
  close(): Promise<void>;
}
