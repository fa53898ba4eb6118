// cacheApiKeyVerification over a real store (PGlite): a verified key is trusted from memory
// within the TTL (no statement), expiry is still checked at each use, only "ok" is kept, a
// revocation through the cached repository holds at once and one made elsewhere after the TTL.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cacheApiKeyVerification, createStore, type ApiKeyRepository, type GatewayStore } from "../src/index.js";

/** The real repository, counting the verifications that reach the database. */
function counted(repo: ApiKeyRepository): { repo: ApiKeyRepository; reads: () => number } {
  let reads = 0;
  return {
    repo: { ...repo, verify: (...args) => (reads++, repo.verify(...args)) },
    reads: () => reads,
  };
}

describe("cacheApiKeyVerification", () => {
  let store: GatewayStore;
  let tenantId: string;
  beforeAll(async () => {
    store = await createStore({ driver: "pglite" });
    tenantId = `t-${randomUUID()}`;
    await store.tenants.create({ tenantId, name: "keys" });
  });
  afterAll(() => store.close());

  it("answers a verified key from memory within the TTL; its own revocation holds at once", async () => {
    const { secret, key } = await store.apiKeys.create({ tenantId, name: "a" });
    const db = counted(store.apiKeys);
    const cached = cacheApiKeyVerification(db.repo, 3_600_000);
    expect(await cached.verify(secret)).toMatchObject({ status: "ok", key: { keyId: key.keyId, tenantId } });
    expect(await cached.verify(secret)).toMatchObject({ status: "ok" });
    expect(db.reads()).toBe(1);
    await cached.revoke(tenantId, key.keyId);
    expect(await cached.verify(secret)).toEqual({ status: "revoked", keyId: key.keyId, tenantId });
    expect(db.reads()).toBe(2);
  });

  it("sees a revocation made elsewhere once the TTL passed, and keeps nothing but ok", async () => {
    const { secret, key } = await store.apiKeys.create({ tenantId, name: "b" });
    const db = counted(store.apiKeys);
    const cached = cacheApiKeyVerification(db.repo, 150);
    expect((await cached.verify(secret)).status).toBe("ok");
    await store.apiKeys.revoke(tenantId, key.keyId);
    // Revoked on another replica: trusted until the TTL passes, then refused.
    expect((await cached.verify(secret)).status).toBe("ok");
    await new Promise((r) => setTimeout(r, 200));
    expect((await cached.verify(secret)).status).toBe("revoked");
    expect((await cached.verify(secret)).status).toBe("revoked");
    // A wrong secret and a revoked key are read every time.
    expect((await cached.verify(`${secret}x`)).status).toBe("invalid");
    expect((await cached.verify(`${secret}x`)).status).toBe("invalid");
    expect(db.reads()).toBe(5);
  });

  it("checks expiry at each use, and keeps scopes apart", async () => {
    const expiresAt = new Date(Date.now() + 60_000);
    const { secret, key } = await store.apiKeys.create({ tenantId, name: "c", expiresAt });
    const cached = cacheApiKeyVerification(store.apiKeys, 3_600_000);
    expect((await cached.verify(secret, new Date())).status).toBe("ok");
    expect(await cached.verify(secret, new Date(expiresAt.getTime() + 1))).toEqual({ status: "expired", keyId: key.keyId, tenantId });
    // A gateway key presented for another scope is unknown there, cached or not.
    const { secret: usage } = await store.apiKeys.create({ tenantId, name: "d", scope: "usage_read" });
    expect((await cached.verify(usage, new Date(), "usage_read")).status).toBe("ok");
    expect((await cached.verify(usage)).status).toBe("invalid");
  });

  it("is off at 0", async () => {
    const { secret } = await store.apiKeys.create({ tenantId, name: "e" });
    const db = counted(store.apiKeys);
    const off = cacheApiKeyVerification(db.repo, 0);
    await off.verify(secret);
    await off.verify(secret);
    expect(db.reads()).toBe(2);
  });
});
