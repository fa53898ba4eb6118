import type { KeyEncryptionKey } from "./crypto/kek.js";

/** Options every driver shares. */
export interface CommonStoreOptions {
  /**
   * Seals and opens tenant provider credentials (store.credentials). Without it the rest of
   * the store works and credential calls throw StoreError "no_kek".
   */
  kek?: KeyEncryptionKey;
}

/** How createStore connects. Validated once, when the store is created. */
export type StoreOptions = CommonStoreOptions & (
  | {
      /** Embedded Postgres (WASM) in this process: one connection, no server needed. */
      driver: "pglite";
      /** Directory holding the database files; undefined = in-memory, gone on close. */
      dataDir?: string;
    }
  | {
      /** A PostgreSQL server through a node-postgres pool. */
      driver: "postgres";
      /** libpq-style connection URL, e.g. postgres://user@host:5432/db. */
      url: string;
      /**
       * Postgres schema holding every table of the store, including drizzle's migrations
       * journal; created if missing. Lets tests (and co-hosted deployments) isolate themselves.
       * Must match /^[a-z_][a-z0-9_]*$/ (at most 63 chars). Undefined = the server's search_path
       * (normally `public`) and drizzle's default `drizzle.__drizzle_migrations` journal.
       */
      schema?: string;
      /** Pool size; default 10. */
      maxConnections?: number;
    });
