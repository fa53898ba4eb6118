import { createReadCache } from "../read-cache.js";
import type { TenantRecord, TenantRepository } from "./types.js";

const MAX_CACHED_TENANTS = 10_000;

/**
 * The tenant repository with `get` answered from memory for `ttlMs` per tenant: a run reads its
 * tenant's retention, policy and limits several times (content mode, rate limits, budgets), one
 * statement each without it. Writes through this repository drop the tenant's entry; a change
 * made elsewhere (another process, the admin API) shows within `ttlMs`. Misses are cached too.
 */
export function cacheTenantReads(repo: TenantRepository, ttlMs: number): TenantRepository {
  const cache = createReadCache<string, TenantRecord | undefined>(ttlMs, MAX_CACHED_TENANTS);
  return {
    ...repo,
    get: (tenantId) => cache.get(tenantId, () => repo.get(tenantId)),
    async create(t) {
      cache.forget(t.tenantId);
      return repo.create(t);
    },
    async ensure(t) {
      cache.forget(t.tenantId);
      return repo.ensure(t);
    },
    update: (tenantId, patch) => cache.afterWrite(repo.update(tenantId, patch), tenantId),
  };
}
