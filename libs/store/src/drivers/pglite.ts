/**
 * Embedded driver: PGlite (Postgres compiled to WASM) in this process. PGlite has a single
 * connection and runs each transaction under a mutex that also holds back standalone
 * queries, so transactions are serialised by construction.
 */
import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { migrate } from "drizzle-orm/pglite/migrator";
import { migrationConfig } from "../migrations.js";
import { asText, TEXT_RESULT_OIDS, type OpenedDatabase } from "./opened.js";

/**
 * Date/time types as text, like drizzle's PGlite session (opened.ts `TEXT_RESULT_OIDS`), set on
 * the client rather than passed to each `query`: PGlite copies its whole parser table into every
 * query given `parsers` (~0.1 ms each, measured). drizzle's queries pass the same parsers, so
 * theirs read as before. PGlite registers array parsers after start, so an array of these comes
 * back as an array of text (no rendered read returns one).
 */
const PARSERS = Object.fromEntries(TEXT_RESULT_OIDS.map((oid) => [oid, asText]));

/** Opens (creating if needed) the database at `dataDir`, or an in-memory one, and migrates it. */
export async function openPglite(dataDir: string | undefined): Promise<OpenedDatabase> {
  const client = new PGlite({ ...(dataDir === undefined ? {} : { dataDir }), parsers: PARSERS });
  const db = drizzle({ client });
  const config = migrationConfig();
  try {
    await migrate(db, config);
  } catch (e) {
    await client.close();
    throw e;
  }
  return {
    db,
    migrationConfig: config,
    query: async (text, params) => ({ rows: (await client.query(text, [...params])).rows }),
    close: () => client.close(),
  };
}
