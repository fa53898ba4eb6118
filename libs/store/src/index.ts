/**
 * @byok/store public surface: createStore() and the contracts of what it returns. Nothing
 * else in this package is part of the API.
 */
import { createGatewayStore } from "./gateway-store.js";
import { openPglite } from "./drivers/pglite.js";
import { openPostgres } from "./drivers/postgres.js";
import type { StoreOptions } from "./options.js";
import type { GatewayStore } from "./types.js";

export type { AppendAlongside, BlobPut, CheckpointRecord, ConversationRecord, GatewayStore, HistoryEntry, NewCheckpoint, NewHistoryEntry, RunFence, Store } from "./types.js";
export type {
  ApiKeyRecord,
  ApiKeyScope,
  ApiKeyRepository,
  ApiKeyVerification,
  BudgetLimits,
  CredentialInfo,
  CredentialRepository,
  RateLimits,
  RetentionPolicy,
  RouteRepository,
  TenantLimits,
  TenantRecord,
  TenantRepository,
  TenantRouteRecord,
  UserRecord,
} from "./tenancy/types.js";
export type {
  AttemptOutcome,
  AuditEntry,
  AuditRecord,
  AuditRepository,
  DailyUsage,
  LedgerEntry,
  LedgerRepository,
  DailyOutcomes,
  DailyRefusals,
  DailyRequests,
  Refusal,
  RefusalReason,
  LedgerRow,
  NewPrice,
  PriceRecord,
  PriceRepository,
  UsageQuery,
  UsageTotals,
} from "./metering/types.js";
export type { CommonStoreOptions, StoreOptions } from "./options.js";
export { StoreError, isStoreError, isStoreUnavailable, type StoreErrorCode } from "./errors.js";
export { knownMigrations } from "./migrations.js";
export { cacheTenantReads } from "./tenancy/cached-tenants.js";
export { cacheApiKeyVerification } from "./tenancy/cached-api-keys.js";
export { cacheRouteReads } from "./tenancy/cached-routes.js";
export { cachePriceReads } from "./metering/cached-prices.js";
export { contentStore, type ContentMode, type HeldContent, type RunContent } from "./content/ephemeral.js";
export { generateApiKey, parseApiKey, type ParsedApiKey } from "./tenancy/api-key-format.js";
export { KekError, type KekErrorCode, type KeyEncryptionKey, type SealedSecret } from "./crypto/kek.js";
export { createAesGcmKek } from "./crypto/aes-gcm.js";
export { kekFromEnv, KEK_ENV, KEK_VERSION_ENV } from "./crypto/env-kek.js";
export { loadOrCreateFileKek, KEK_FILE } from "./crypto/file-kek.js";

/**
 * Opens the store and applies every pending migration before resolving, so the returned
 * store always sees the schema of this build. Rejects (and releases what it opened) if the
 * database is unreachable or a migration fails.
 */
export async function createStore(opts: StoreOptions): Promise<GatewayStore> {
  switch (opts.driver) {
    case "pglite":
      return createGatewayStore(await openPglite(opts.dataDir), opts.kek);
    case "postgres":
      return createGatewayStore(
        await openPostgres({ url: opts.url, schema: opts.schema, maxConnections: opts.maxConnections }),
        opts.kek,
      );
  }
}
