import { createReadCache } from "../read-cache.js";
import type { PriceRecord, PriceRepository } from "./types.js";

/**
 * The price repository with `at` answered from memory: the whole price table (a few hundred
 * versions) is read at most once per `ttlMs` and the version in force picked from it, so a
 * ledger record costs no price statement. A price set through this repository (the admin API of
 * the same process) applies at once; one set through another process within `ttlMs`. 0 turns
 * the cache off.
 */
export function cachePriceReads(repo: PriceRepository, ttlMs: number): PriceRepository {
  if (ttlMs <= 0) return repo;
  const cache = createReadCache<"all", PriceRecord[]>(ttlMs, 1);
  return {
    ...repo,
    set: (p) => cache.afterWrite(repo.set(p)),
    async at(provider, model, at = new Date()) {
      // The repository's own order: the highest effective_from ≤ at, then the highest version.
      let best: PriceRecord | undefined;
      for (const p of await cache.get("all", () => repo.list())) {
        if (p.provider !== provider || p.model !== model || p.effectiveFrom > at) continue;
        if (!best || p.effectiveFrom > best.effectiveFrom || (p.effectiveFrom.getTime() === best.effectiveFrom.getTime() && p.version > best.version)) best = p;
      }
      return best;
    },
  };
}
