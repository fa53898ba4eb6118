// cacheTenantReads over a real store (PGlite): reads within the TTL come from memory, writes
// through the cached repository are seen at once, writes elsewhere after the TTL.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cacheTenantReads, createStore, type GatewayStore } from "../src/index.js";

describe("cacheTenantReads", () => {
  let store: GatewayStore;
  beforeAll(async () => {
    store = await createStore({ driver: "pglite" });
  });
  afterAll(() => store.close());

  it("answers get from memory within the TTL; its own writes drop the entry", async () => {
    const tenantId = `t-${randomUUID()}`;
    const cached = cacheTenantReads(store.tenants, 3_600_000);
    expect(await cached.get(tenantId)).toBeUndefined();
    await store.tenants.create({ tenantId, name: "a" });
    // Created elsewhere (the uncached repository): the cached miss still answers.
    expect(await cached.get(tenantId)).toBeUndefined();
    await cached.update(tenantId, { retention: "metadata" });
    expect((await cached.get(tenantId))?.retention).toBe("metadata");
    await store.tenants.update(tenantId, { retention: "none" });
    expect((await cached.get(tenantId))?.retention).toBe("metadata");
    expect((await store.tenants.get(tenantId))?.retention).toBe("none");
  });

  it("reads again once the TTL passed", async () => {
    const tenantId = `t-${randomUUID()}`;
    await store.tenants.create({ tenantId, name: "b" });
    const cached = cacheTenantReads(store.tenants, 20);
    expect((await cached.get(tenantId))?.retention).toBe("full");
    await store.tenants.update(tenantId, { retention: "none" });
    // Past the TTL (Date.now based): the next get reads the row again.
    await new Promise((r) => setTimeout(r, 40));
    expect((await cached.get(tenantId))?.retention).toBe("none");
  });
});
