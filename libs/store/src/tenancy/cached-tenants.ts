import type { TenantRecord, TenantRepository } from "./types.js";

const MAX_CACHED_TENANTS = 10_000;

/**
 * The tenant repository with `get` answered from memory for `ttlMs` per tenant: a run reads its
 * tenant's retention, policy and limits several times (content mode, rate limits, budgets), one
 * statement each without it. Writes through this repository drop the tenant's entry; a change
 * made elsewhere (another process, the admin API) shows within `ttlMs`. Misses are cached too.
 */
export function cacheTenantReads(repo: TenantRepository, ttlMs: number): TenantRepository {
  const cache = new Map<string, { at: number; tenant: Promise<TenantRecord | undefined> }>();
  const forget = (tenantId: string) => cache.delete(tenantId);
  return {
    ...repo,
    get(tenantId) {
      const hit = cache.get(tenantId);
      if (hit && Date.now() - hit.at <= ttlMs) return hit.tenant;
      if (cache.size >= MAX_CACHED_TENANTS) cache.clear();
      // The promise is cached, so concurrent readers of a cold entry share one statement; a
      // failed read is not kept.
      const tenant = repo.get(tenantId);
      const entry = { at: Date.now(), tenant };
      cache.set(tenantId, entry);
      tenant.catch(() => {
        if (cache.get(tenantId) === entry) forget(tenantId);
      });
      return tenant;
    },
    async create(t) {
      forget(t.tenantId);
      return repo.create(t);
    },
    async ensure(t) {
      forget(t.tenantId);
      return repo.ensure(t);
    },
    async update(tenantId, patch) {
      try {
        return await repo.update(tenantId, patch);
      } finally {
        forget(tenantId);
      }
    },
  };
}
