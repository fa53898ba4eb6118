/**
 * Where the committed migrations live and how to read which ones a database has applied.
 * drizzle's journal table records only each migration's hash and `when` stamp; the names
 * come from `migrations/meta/_journal.json`, matched on `when`.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { MigrationConfig } from "drizzle-orm/migrator";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";

/** Resolved from this file, not the cwd, so the store migrates from any working directory. */
export const migrationsFolder = join(import.meta.dirname, "..", "migrations");

/** drizzle migrator settings; with a schema, the journal table lives inside it too. */
export function migrationConfig(schema?: string): Required<MigrationConfig> {
  return {
    migrationsFolder,
    migrationsSchema: schema ?? "drizzle",
    migrationsTable: "__drizzle_migrations",
  };
}

interface JournalEntry {
  tag: string;
  when: number;
}

function readJournal(): JournalEntry[] {
  const raw: unknown = JSON.parse(readFileSync(join(migrationsFolder, "meta", "_journal.json"), "utf8"));
  if (typeof raw !== "object" || raw === null || !("entries" in raw) || !Array.isArray(raw.entries)) {
    throw new Error(`malformed migrations journal in ${migrationsFolder}`);
  }
  return raw.entries.map((e: { tag: unknown; when: unknown }) => ({ tag: String(e.tag), when: Number(e.when) }));
}

/** Names of every committed migration, in order. */
export function knownMigrations(): string[] {
  return readJournal().map((e) => e.tag);
}

/**
 * Names of the migrations applied to `db`, in application order. A migration applied by a
 * newer build (not in this build's journal) shows as `unknown@<when>`.
 */
export async function appliedMigrations(
  db: PgDatabase<PgQueryResultHKT>,
  config: Required<MigrationConfig>,
): Promise<string[]> {
  const byWhen = new Map(readJournal().map((e) => [e.when, e.tag]));
  const rows = await db
    .select({ when: sql<string>`created_at`.mapWith(Number) })
    .from(sql`${sql.identifier(config.migrationsSchema)}.${sql.identifier(config.migrationsTable)}`)
    .orderBy(sql`id`);
  return rows.map((r) => byWhen.get(r.when) ?? `unknown@${r.when}`);
}
