/**
 * Server driver: PostgreSQL through a node-postgres pool, optionally confined to one schema.
 */
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { StoreError } from "../errors.js";
import { migrationConfig } from "../migrations.js";
import { asText, statementNames, TEXT_RESULT_OIDS, type OpenedDatabase } from "./opened.js";

/** Result parsers of `query`: date/time types as text, like drizzle's node-postgres session (opened.ts). */
const QUERY_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    TEXT_RESULT_OIDS.includes(oid) ? asText : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig["getTypeParser"],
};

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export interface PostgresTarget {
  url: string;
  schema?: string | undefined;
  maxConnections?: number | undefined;
}

/**
 * Opens a pool whose every connection has `search_path` set to `schema` (via the startup
 * `options` parameter, so it holds from the first query with no race), creates the schema
 * if missing, and applies pending migrations under an advisory lock so that replicas (or
 * test files) starting together on the same schema migrate once, not concurrently.
 */
export async function openPostgres(target: PostgresTarget): Promise<OpenedDatabase> {
  const { schema } = target;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new StoreError("invalid_argument", `invalid Postgres schema name ${JSON.stringify(schema)}`);
  }
  const pool = new pg.Pool({
    connectionString: schema === undefined ? target.url : withSearchPath(target.url, schema),
    max: target.maxConnections ?? 10,
  });
  // An idle client that loses its server emits on the pool; without a listener Node would
  // crash the process. The pool already discards that client and the next query reports.
  pool.on("error", () => {});
  const config = migrationConfig(schema);
  try {
    await migrateLocked(pool, config, schema);
  } catch (e) {
    await pool.end();
    throw e;
  }
  const nameOf = statementNames();
  return {
    db: drizzle({ client: pool }),
    migrationConfig: config,
    // Named: node-postgres prepares each statement once per pooled connection, then only binds it.
    query: async (text, params) => ({ rows: (await pool.query({ name: nameOf(text), text, values: [...params], types: QUERY_TYPES })).rows as unknown[] }),
    close: () => pool.end(),
  };
}

/**
 * Adds `-c search_path=<schema>` to the URL's `options` parameter. Done on the URL rather
 * than the pool config because node-postgres lets URL parameters override config fields.
 */
function withSearchPath(url: string, schema: string): string {
  const parsed = new URL(url);
  const existing = parsed.searchParams.get("options");
  const option = `-c search_path=${schema}`;
  parsed.searchParams.set("options", existing ? `${existing} ${option}` : option);
  return parsed.toString();
}

async function migrateLocked(
  pool: pg.Pool,
  config: ReturnType<typeof migrationConfig>,
  schema: string | undefined,
): Promise<void> {
  // Session-level advisory lock: it must be taken and released on the same connection,
  // and the migrator must run on that connection too.
  const client = await pool.connect();
  const lockKey = `byok-store:migrate:${schema ?? "<search_path>"}`;
  let broken: Error | undefined;
  try {
    await client.query("select pg_advisory_lock(hashtext($1))", [lockKey]);
    try {
      // Inside the lock: concurrent CREATE SCHEMA IF NOT EXISTS can still fail on the catalog's unique index.
      if (schema !== undefined) await client.query(`create schema if not exists "${schema}"`);
      await migrate(drizzle({ client }), config);
    } finally {
      await client.query("select pg_advisory_unlock(hashtext($1))", [lockKey]);
    }
  } catch (e) {
    broken = e instanceof Error ? e : new Error(String(e));
    throw e;
  } finally {
    // A connection that failed mid-migration may still hold the lock or an aborted transaction: drop it.
    client.release(broken);
  }
}
