/** ApiKeyRepository over drizzle: hashed secrets, lookup by public prefix, constant-time compare. */
import { randomUUID } from "node:crypto";
import { and, asc, eq, isNull, lt, or, sql } from "drizzle-orm";
import { isUniqueViolation, type Db } from "../db.js";
import { apiKeys } from "../schema.js";
import { generateApiKey, hashesEqual, hashSecret, parseApiKey } from "./api-key-format.js";
import type { ApiKeyRecord, ApiKeyRepository, ApiKeyScope } from "./types.js";

/** last_used_at is refreshed at most this often per key, so verification is not a write per request. */
const LAST_USED_RESOLUTION_MS = 60_000;
/** Compared against when the prefix is unknown, so the miss costs the same hash compare. */
const DUMMY_HASH = hashSecret("byok-dummy");

export function createApiKeyRepository(db: Db): ApiKeyRepository {
  return {
    async create(k) {
      // A 48-bit prefix collision is unlikely but not impossible: draw again.
      for (let tries = 0; ; tries++) {
        const generated = generateApiKey();
        try {
          const [row] = await db
            .insert(apiKeys)
            .values({
              tenantId: k.tenantId,
              keyId: `key_${randomUUID()}`,
              userId: k.scope === "usage_read" ? null : (k.userId ?? null),
              scope: k.scope ?? "gateway",
              prefix: generated.prefix,
              hash: hashSecret(generated.secret),
              name: k.name,
              expiresAt: k.expiresAt ?? null,
            })
            .returning();
          if (row === undefined) throw new Error("insert returned no row");
          return { key: toKey(row), secret: generated.full };
        } catch (e) {
          if (!isUniqueViolation(e) || tries >= 3) throw e;
        }
      }
    },

    async list(tenantId) {
      return (await db.select().from(apiKeys).where(eq(apiKeys.tenantId, tenantId)).orderBy(asc(apiKeys.createdAt), asc(apiKeys.keyId))).map(toKey);
    },

    async get(tenantId, keyId) {
      const [row] = await db.select().from(apiKeys).where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.keyId, keyId)));
      return row === undefined ? undefined : toKey(row);
    },

    async revoke(tenantId, keyId) {
      const where = and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.keyId, keyId));
      await db.update(apiKeys).set({ revokedAt: sql`now()` }).where(and(where, isNull(apiKeys.revokedAt)));
      const [row] = await db.select().from(apiKeys).where(where);
      return row === undefined ? undefined : toKey(row);
    },

    async verify(presented, now = new Date(), scope = "gateway") {
      const parsed = parseApiKey(presented);
      const [row] = parsed === undefined ? [] : await db.select().from(apiKeys).where(eq(apiKeys.prefix, parsed.prefix));
      // A key of another scope is as unknown as a wrong secret (the hash is still compared).
      const matches = hashesEqual(row?.hash ?? DUMMY_HASH, hashSecret(parsed?.secret ?? "")) && row !== undefined && row.scope === scope;
      if (!matches || row === undefined) return { status: "invalid" };
      if (row.revokedAt !== null && row.revokedAt <= now) return { status: "revoked", keyId: row.keyId, tenantId: row.tenantId };
      if (row.expiresAt !== null && row.expiresAt <= now) return { status: "expired", keyId: row.keyId, tenantId: row.tenantId };
      const stale = new Date(now.getTime() - LAST_USED_RESOLUTION_MS);
      // The row just read says whether the UPDATE could match: skip the statement when it cannot
      // (a concurrent verify only makes last_used_at newer), so most requests cost one query.
      if (row.lastUsedAt !== null && row.lastUsedAt >= stale) return { status: "ok", key: toKey(row) };
      await db
        .update(apiKeys)
        .set({ lastUsedAt: now })
        .where(and(eq(apiKeys.tenantId, row.tenantId), eq(apiKeys.keyId, row.keyId), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, stale))));
      return { status: "ok", key: toKey(row) };
    },
  };
}

function toKey(r: typeof apiKeys.$inferSelect): ApiKeyRecord {
  return {
    tenantId: r.tenantId,
    keyId: r.keyId,
    userId: r.userId ?? undefined,
    scope: r.scope as ApiKeyScope,
    prefix: r.prefix,
    name: r.name,
    createdAt: r.createdAt,
    expiresAt: r.expiresAt ?? undefined,
    revokedAt: r.revokedAt ?? undefined,
    lastUsedAt: r.lastUsedAt ?? undefined,
  };
}
