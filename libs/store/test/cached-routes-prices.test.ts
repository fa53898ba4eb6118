// cacheRouteReads and cachePriceReads over a real store (PGlite): reads within the TTL come
// from memory, writes through the cached repository are seen at once, writes elsewhere after
// the TTL; the cached price lookup picks the same version the store's own query does.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cachePriceReads, cacheRouteReads, createStore, type GatewayStore } from "../src/index.js";

const target = (model: string) => ({ provider: "openai-chat", model, baseUrl: "https://api.example.test/v1", credentials: "client" });

describe("cacheRouteReads", () => {
  let store: GatewayStore;
  beforeAll(async () => {
    store = await createStore({ driver: "pglite" });
  });
  afterAll(() => store.close());

  it("answers list from memory within the TTL; its own set, apply and delete drop the tenant's entry", async () => {
    const tenantId = `t-${randomUUID()}`;
    const cached = cacheRouteReads(store.routes, 3_600_000);
    const models = async () => (await cached.list(tenantId)).map((r) => `${r.modelId}:${String(r.targets[0]?.model)}`);
    expect(await models()).toEqual([]);
    // Written elsewhere (another process's admin API): the cached answer stands.
    await store.routes.set(tenantId, "m1", [target("a")]);
    expect(await models()).toEqual([]);
    await cached.set(tenantId, "m1", [target("b")]);
    expect(await models()).toEqual(["m1:b"]);
    await cached.apply(tenantId, [{ modelId: "m2", targets: [target("c")] }]);
    expect(await models()).toEqual(["m1:b", "m2:c"]);
    await cached.delete(tenantId, "m1");
    expect(await models()).toEqual(["m2:c"]);
  });

  it("reads again once the TTL passed, and not at all with 0", async () => {
    const tenantId = `t-${randomUUID()}`;
    const cached = cacheRouteReads(store.routes, 20);
    expect(await cached.list(tenantId)).toEqual([]);
    await store.routes.set(tenantId, "m", [target("a")]);
    await new Promise((r) => setTimeout(r, 40));
    expect((await cached.list(tenantId)).map((r) => r.modelId)).toEqual(["m"]);
    expect(cacheRouteReads(store.routes, 0)).toBe(store.routes);
  });
});

describe("cachePriceReads", () => {
  let store: GatewayStore;
  beforeAll(async () => {
    store = await createStore({ driver: "pglite" });
  });
  afterAll(() => store.close());

  const price = (model: string, input: number, effectiveFrom?: Date) => ({
    provider: "openai-chat", model, inputPerMTok: input, outputPerMTok: 1, cacheReadPerMTok: 0, cacheWritePerMTok: 0, ...(effectiveFrom ? { effectiveFrom } : {}),
  });

  it("picks the version in force at each time as the store does, its own set applying at once", async () => {
    const model = `m-${randomUUID()}`;
    const cached = cachePriceReads(store.prices, 3_600_000);
    expect(await cached.at("openai-chat", model)).toBeUndefined();
    const t0 = new Date(Date.now() - 60_000);
    await cached.set(price(model, 10, t0));
    await cached.set(price(model, 20, t0)); // same effective time: the higher version wins
    await cached.set(price(model, 30, new Date(Date.now() + 3_600_000))); // not yet in force
    for (const at of [new Date(t0.getTime() - 1), t0, new Date(), new Date(Date.now() + 7_200_000)]) {
      const [mine, stores] = [await cached.at("openai-chat", model, at), await store.prices.at("openai-chat", model, at)];
      expect(mine?.version, at.toISOString()).toBe(stores?.version);
    }
    expect((await cached.at("openai-chat", model))?.inputPerMTok).toBe(20);
    expect(await cached.at("anthropic", model)).toBeUndefined();
  });

  it("sees a price set elsewhere only after the TTL", async () => {
    const model = `m-${randomUUID()}`;
    // Long enough that the set below lands inside it on a loaded machine.
    const cached = cachePriceReads(store.prices, 1_000);
    expect(await cached.at("openai-chat", model)).toBeUndefined();
    await store.prices.set(price(model, 5, new Date(Date.now() - 1_000)));
    expect(await cached.at("openai-chat", model)).toBeUndefined();
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await cached.at("openai-chat", model))?.inputPerMTok).toBe(5);
  });
});
