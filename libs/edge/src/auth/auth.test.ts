/** Gateway authentication against the real store (PGlite). */
import { Code, ConnectError } from "@connectrpc/connect";
import { createStore, type GatewayStore } from "@byok/store";
import { ErrorDetails_Error, ErrorDetailsSchema } from "@byok/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthConfigError, createApiKeyAuthenticator, createAuthenticator, createTrustedHeaderAuthenticator } from "./index.js";

let store: GatewayStore;
beforeAll(async () => {
  store = await createStore({ driver: "pglite" });
  await store.tenants.create({ tenantId: "acme", name: "Acme" });
});
afterAll(async () => {
  await store?.close();
});

async function rejection(p: Promise<unknown>): Promise<ConnectError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ConnectError);
  const err = e as ConnectError;
  expect(err.code).toBe(Code.Unauthenticated);
  expect(err.findDetails(ErrorDetailsSchema)[0]?.error).toBe(ErrorDetails_Error.BAD_API_KEY);
  return err;
}

describe("API key authenticator", () => {
  const auth = () => createApiKeyAuthenticator({ keys: store.apiKeys });

  it("binds Bearer and x-gateway-api-key requests to the key's tenant, user and key id", async () => {
    const { key, secret } = await store.apiKeys.create({ tenantId: "acme", userId: "alice", name: "laptop" });
    const expected = { tenantId: "acme", userId: "alice", keyId: key.keyId, via: "api_key" };
    expect(await auth().authenticate(new Headers({ authorization: `Bearer ${secret}` }))).toEqual(expected);
    expect(await auth().authenticate(new Headers({ "x-gateway-api-key": secret, authorization: "Bearer cursor-token" }))).toEqual(expected);
  });

  it("refuses missing, malformed and wrong keys without echoing them", async () => {
    const { secret } = await store.apiKeys.create({ tenantId: "acme", name: "k" });
    await rejection(auth().authenticate(new Headers()));
    // The wrong key differs from the real one in its last digit whatever that digit is (a fixed
    // "00" suffix matched one secret in 256 and made this test flaky).
    const wrong = `${secret.slice(0, -1)}${secret.endsWith("0") ? "1" : "0"}`;
    for (const bad of ["Basic abc", "Bearer nope", `Bearer ${wrong}`]) {
      const err = await rejection(auth().authenticate(new Headers({ authorization: bad })));
      expect(err.message).not.toContain(secret.slice(-20));
    }
  });

  it("refuses revoked and expired keys, saying which", async () => {
    const revoked = await store.apiKeys.create({ tenantId: "acme", name: "r" });
    await store.apiKeys.revoke("acme", revoked.key.keyId);
    expect((await rejection(auth().authenticate(new Headers({ authorization: `Bearer ${revoked.secret}` })))).rawMessage).toMatch(/revoked/);
    const expiring = await store.apiKeys.create({ tenantId: "acme", name: "e", expiresAt: new Date(Date.now() + 60_000) });
    const later = createApiKeyAuthenticator({ keys: store.apiKeys, now: () => new Date(Date.now() + 120_000) });
    expect((await rejection(later.authenticate(new Headers({ authorization: `Bearer ${expiring.secret}` })))).rawMessage).toMatch(/expired/);
  });
});

describe("trusted-header authenticator", () => {
  const secret = "proxy-shared-secret-0123456789";
  const auth = createTrustedHeaderAuthenticator({ secret, tenantExists: async (id) => (await store.tenants.get(id)) !== undefined });

  it("accepts tenant and user headers only with the shared secret", async () => {
    const h = new Headers({ "x-gateway-proxy-secret": secret, "x-gateway-tenant": "acme", "x-gateway-user": "bob@acme" });
    expect(await auth.authenticate(h)).toEqual({ tenantId: "acme", userId: "bob@acme", keyId: undefined, via: "trusted_header" });
    const noUser = new Headers({ "x-gateway-proxy-secret": secret, "x-gateway-tenant": "acme" });
    expect((await auth.authenticate(noUser)).userId).toBeUndefined();
  });

  it("refuses forged headers: no secret, wrong secret, unknown or malformed tenant", async () => {
    await rejection(auth.authenticate(new Headers({ "x-gateway-tenant": "acme" })));
    await rejection(auth.authenticate(new Headers({ "x-gateway-proxy-secret": `${secret}x`, "x-gateway-tenant": "acme" })));
    await rejection(auth.authenticate(new Headers({ "x-gateway-proxy-secret": secret, "x-gateway-tenant": "other" })));
    await rejection(auth.authenticate(new Headers({ "x-gateway-proxy-secret": secret, "x-gateway-tenant": "a b" })));
  });

  it("needs a secret of at least 16 characters", () => {
    expect(() => createTrustedHeaderAuthenticator({ secret: "short" })).toThrow();
  });
});

describe("createAuthenticator", () => {
  it("allows open mode only embedded and on loopback", async () => {
    const open = createAuthenticator({ deployment: "embedded", listenHost: "127.0.0.1", auth: { mode: "open", tenantId: "default" } });
    expect(await open.authenticate(new Headers())).toEqual({ tenantId: "default", userId: undefined });
    expect(() => createAuthenticator({ deployment: "distributed", listenHost: "127.0.0.1", auth: { mode: "open", tenantId: "d" } })).toThrow(AuthConfigError);
    expect(() => createAuthenticator({ deployment: "embedded", listenHost: "0.0.0.0", auth: { mode: "open", tenantId: "d" } })).toThrow(AuthConfigError);
    expect(() => createAuthenticator({ deployment: "distributed", listenHost: "0.0.0.0", auth: { mode: "api_key", keys: store.apiKeys } })).not.toThrow();
  });
});
