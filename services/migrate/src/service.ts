import type { GatewayConfig } from "@byok/config";
import { openGatewayStore } from "@byok/process";
import { knownMigrations } from "@byok/store";

export interface MigrationReport {
  /** Postgres schema migrated (undefined: the connection's search_path). */
  schema: string | undefined;
  /** Every migration the database has applied, in order, after this run. */
  applied: string[];
  /** Migrations this build knows. */
  known: string[];
}

/**
 * Applies every pending drizzle migration of @byok/store to the configured PostgreSQL
 * (DATABASE_URL, GATEWAY_DATABASE_SCHEMA). The store migrates under a Postgres advisory lock,
 * so a migrate job racing a replica that also migrates on start applies each migration once.
 */
export async function runMigrations(config: GatewayConfig): Promise<MigrationReport> {
  if (config.store.driver !== "postgres") throw new Error("migrate needs DATABASE_URL (PostgreSQL); PGlite migrates itself when the embedded gateway opens it");
  const { schema } = config.store;
  const store = await openGatewayStore(config, undefined, { maxConnections: 1 });
  try {
    return { schema, applied: await store.migrations(), known: knownMigrations() };
  } finally {
    await store.close();
  }
}
