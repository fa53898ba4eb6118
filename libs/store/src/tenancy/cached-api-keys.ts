import { secretDigest } from "./api-key-format.js";
import type { ApiKeyRecord, ApiKeyRepository, ApiKeyScope } from "./types.js";

const MAX_CACHED_KEYS = 10_000;

/**
 * The API-key repository with successful verifications answered from memory for `ttlMs`: every
 * BidiAppend and RunSSE of a turn authenticates (about six per turn), one statement each without
 * it. What is kept is the key's record, so expiry is still checked at each use; only "ok" is
 * kept (an unknown, revoked or expired key is read every time). A revocation through this
 * repository (the admin API of the same process) holds at once; one made elsewhere (another
 * replica's admin API) within `ttlMs`. Entries are found by the SHA-256 of scope and presented
 * key, never by the key itself. 0 turns the cache off.
 */
export function cacheApiKeyVerification(repo: ApiKeyRepository, ttlMs: number): ApiKeyRepository {
  if (ttlMs <= 0) return repo;
  const cache = new Map<string, { at: number; key: ApiKeyRecord }>();
  const entryOf = (presented: string, scope: ApiKeyScope) => secretDigest(`${scope}\u0000${presented}`);
  return {
    ...repo,
    async verify(presented, now = new Date(), scope = "gateway") {
      const entry = entryOf(presented, scope);
      const hit = cache.get(entry);
      if (hit && Date.now() - hit.at <= ttlMs) {
        const { key } = hit;
        if (key.expiresAt !== undefined && key.expiresAt <= now) {
          cache.delete(entry);
          return { status: "expired", keyId: key.keyId, tenantId: key.tenantId };
        }
        return { status: "ok", key };
      }
      cache.delete(entry);
      const verified = await repo.verify(presented, now, scope);
      if (verified.status === "ok") {
        if (cache.size >= MAX_CACHED_KEYS) cache.clear();
        cache.set(entry, { at: Date.now(), key: verified.key });
      }
      return verified;
    },
    async revoke(tenantId, keyId) {
      const revoked = await repo.revoke(tenantId, keyId);
      // After the write, so a verification that read the row before it and finished meanwhile is
      // dropped too (one still in flight may keep the key for up to the TTL, as on another replica).
      for (const [entry, { key }] of cache) if (key.tenantId === tenantId && key.keyId === keyId) cache.delete(entry);
      return revoked;
    },
  };
}
