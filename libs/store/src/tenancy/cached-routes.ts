import { createReadCache } from "../read-cache.js";
import type { RouteRepository, TenantRouteRecord } from "./types.js";

const MAX_CACHED_TENANTS = 10_000;

/**
 * The route repository with `list` answered from memory for `ttlMs` per tenant: every model
 * call resolves its tenant's routes before the provider request, so without it each first token
 * waits for a statement. Writes through this repository (the admin API of the same process, the
 * configuration file at start) drop the tenant's entry at once; a change made through another
 * process shows within `ttlMs`. 0 turns the cache off.
 */
export function cacheRouteReads(repo: RouteRepository, ttlMs: number): RouteRepository {
  if (ttlMs <= 0) return repo;
  const cache = createReadCache<string, TenantRouteRecord[]>(ttlMs, MAX_CACHED_TENANTS);
  return {
    list: (tenantId) => cache.get(tenantId, () => repo.list(tenantId)),
    set: (tenantId, modelId, targets, catalogue) => cache.afterWrite(repo.set(tenantId, modelId, targets, catalogue), tenantId),
    apply: (tenantId, routes) => cache.afterWrite(repo.apply(tenantId, routes), tenantId),
    delete: (tenantId, modelId) => cache.afterWrite(repo.delete(tenantId, modelId), tenantId),
  };
}
