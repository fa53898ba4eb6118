import { randomBytes } from "node:crypto";
import type { GatewayConfig } from "@byok/config";
import { cacheApiKeyVerification, cachePriceReads, cacheRouteReads, createAesGcmKek, createStore, kekFromEnv, KEK_ENV, loadOrCreateFileKek, type GatewayStore, type KeyEncryptionKey } from "@byok/store";

/** The KEK of a process: GATEWAY_KEK when set, else the data dir's generated file (embedded only). */
export async function kekFor(config: Pick<GatewayConfig, "kek">, fallback: { dataDir: string } | "ephemeral" | undefined): Promise<KeyEncryptionKey | undefined> {
  if (config.kek !== undefined) return kekFromEnv({ [KEK_ENV]: config.kek });
  if (fallback === "ephemeral") return createAesGcmKek(randomBytes(32));
  if (fallback !== undefined) return loadOrCreateFileKek(fallback.dataDir);
  return undefined;
}

/**
 * Opens the configured store (with its KEK, when the process opens credentials) for a gateway
 * process (ingress, worker, embedded gateway, admin); `maxConnections` caps the Postgres pool of processes that only look up keys.
 * With `apiKeyCacheMs` (GATEWAY_API_KEY_CACHE_MS, processes that authenticate gateway requests),
 * keys it verified are trusted that long; its own revocations (the embedded gateway's admin API)
 * hold at once. With `routeCacheMs` (GATEWAY_ROUTE_CACHE_MS, processes that run or route turns),
 * tenants' routes and the price table likewise, its own writes applying at once.
 */
export async function openGatewayStore(
  config: Pick<GatewayConfig, "store">,
  kek: KeyEncryptionKey | undefined,
  opts: { maxConnections?: number; apiKeyCacheMs?: number; routeCacheMs?: number } = {},
): Promise<GatewayStore> {
  const store = await createStore(
    config.store.driver === "postgres"
      ? {
          driver: "postgres", url: config.store.url, ...(config.store.schema ? { schema: config.store.schema } : {}), ...(kek ? { kek } : {}),
          ...(opts.maxConnections !== undefined ? { maxConnections: opts.maxConnections } : {}),
        }
      : { driver: "pglite", ...(config.store.dataDir ? { dataDir: config.store.dataDir } : {}), ...(kek ? { kek } : {}) },
  );
  if (!opts.apiKeyCacheMs && !opts.routeCacheMs) return store;
  return {
    ...store,
    ...(opts.apiKeyCacheMs ? { apiKeys: cacheApiKeyVerification(store.apiKeys, opts.apiKeyCacheMs) } : {}),
    ...(opts.routeCacheMs ? { routes: cacheRouteReads(store.routes, opts.routeCacheMs), prices: cachePriceReads(store.prices, opts.routeCacheMs) } : {}),
  };
}

