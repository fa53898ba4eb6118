/**
 * @byok/store public surface: createStore() and the Store contract. Nothing else in this
 * package is part of the API.
 */
import { createDrizzleStore } from "./drizzle-store.js";
import { openPglite } from "./drivers/pglite.js";
import { openPostgres } from "./drivers/postgres.js";
import type { StoreOptions } from "./options.js";
import type { Store } from "./types.js";

export type { CheckpointRecord, ConversationRecord, HistoryEntry, NewHistoryEntry, Store } from "./types.js";
export type { StoreOptions } from "./options.js";
export { StoreError, isStoreError, type StoreErrorCode } from "./errors.js";
export { knownMigrations } from "./migrations.js";

/**
 * Opens the store and applies every pending migration before resolving, so the returned
 * Store always sees the schema of this build. Rejects (and releases what it opened) if the
 * database is unreachable or a migration fails.
 */
export async function createStore(opts: StoreOptions): Promise<Store> {
  switch (opts.driver) {
    case "pglite":
      return createDrizzleStore(await openPglite(opts.dataDir));
    case "postgres":
      return createDrizzleStore(
        await openPostgres({ url: opts.url, schema: opts.schema, maxConnections: opts.maxConnections }),
      );
  }
}
