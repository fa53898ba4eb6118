// Sign-in behind an authenticating proxy (trusted_header mode): the exchange authenticates the
// caller like any other call — here with the proxy's headers — and binds the tokens to that
// tenant and user. Real store (PGlite), real authenticator, real HTTP.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeJwt } from "jose";
import { loadConfig } from "@byok/config";
import { createTrustedHeaderAuthenticator } from "@byok/edge";
import { createStore, type GatewayStore } from "@byok/store";
import { createLogger, createMetrics } from "@byok/telemetry";
import { createControlPlane } from "../src/index.js";

const SECRET = "proxy-shared-secret-for-sign-in-tests";

describe("sign-in in trusted_header mode", () => {
  let store: GatewayStore;
  let server: Server;
  let url: string;
  beforeAll(async () => {
    store = await createStore({ driver: "pglite" });
    await store.tenants.create({ tenantId: "acme", name: "Acme" });
    await store.routes.set("acme", "m1", [{ provider: "openai-chat", model: "x" }], { displayName: "Model One" });
    const config = loadConfig({ GATEWAY_TOKEN_KEYS: `k:${Buffer.alloc(32, 3).toString("base64")}` });
    const cp = createControlPlane({
      config,
      store,
      baseAuth: createTrustedHeaderAuthenticator({ secret: SECRET, tenantExists: async (id) => (await store.tenants.get(id)) !== undefined }),
      tokenKeys: config.controlPlane.tokenKeys,
      metrics: createMetrics({ processMetrics: false }),
      logger: createLogger({ service: "test", level: "silent" }),
    });
    server = createServer((req, res) => {
      if (!cp.handle(req, res)) res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.close();
    await store?.close();
  });

  const exchange = (headers: Record<string, string>) =>
    fetch(`${url}/auth/exchange_user_api_key`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: "{}" });

  it("binds the tokens to the proxy's tenant and user; without the proxy's secret it refuses", async () => {
    const ok = await exchange({ "x-gateway-proxy-secret": SECRET, "x-gateway-tenant": "acme", "x-gateway-user": "bob@acme" });
    expect(ok.status).toBe(200);
    const { accessToken } = (await ok.json()) as { accessToken: string };
    expect(decodeJwt(accessToken)).toMatchObject({ sub: "acme/user/bob@acme", tid: "acme", uid: "bob@acme" });
    const models = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${accessToken}` } });
    expect(((await models.json()) as { items: unknown[] }).items).toEqual([{ id: "m1", displayName: "Model One" }]);
    expect((await exchange({ "x-gateway-tenant": "acme" })).status).toBe(401);
    expect((await exchange({ "x-gateway-proxy-secret": SECRET, "x-gateway-tenant": "nobody" })).status).toBe(401);
  });
});
