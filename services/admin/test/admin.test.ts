/** The admin API and CLI end to end, on PGlite and on a real Postgres (own schema). */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAesGcmKek, createStore, type GatewayStore } from "@byok/store";
import { createAdminClient } from "@byok/admin-api";
import { metricDelta, scrapeMetrics } from "@byok/testing";
import { startAdminService, type AdminService } from "../src/index.js";
import { runCli, usdToMicro } from "../src/cli.js";

const ADMIN_KEY = `admin-${randomBytes(12).toString("hex")}`;
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

function adminSuite(name: string, open: () => Promise<GatewayStore>, cleanup: () => Promise<void> = async () => {}): void {
  describe(`admin API on ${name}`, () => {
    let store: GatewayStore;
    let server: AdminService;
    beforeAll(async () => {
      store = await open();
      server = await startAdminService({ store, adminKey: ADMIN_KEY });
    });
    afterAll(async () => {
      await server?.close();
      await store?.close();
      await cleanup();
    });
    const api = () => createAdminClient(server.url, ADMIN_KEY);
    const cli = (...argv: string[]) => runCli(argv, { GATEWAY_ADMIN_URL: server.url, GATEWAY_ADMIN_KEY: ADMIN_KEY, OPENAI_KEY_FOR_TEST: providerSecret });
    const providerSecret = `sk-provider-${randomBytes(12).toString("hex")}`;

    it("refuses calls without the admin key, and audits the refusal", async () => {
      const before = await scrapeMetrics(server.url);
      for (const auth of [undefined, "Bearer wrong-key-wrong-key", `Basic ${ADMIN_KEY}`]) {
        const res = await fetch(`${server.url}/v1/tenants`, auth === undefined ? {} : { headers: { authorization: auth } });
        expect(res.status).toBe(401);
      }
      const denied = (await store.audit.list()).filter((e) => e.action === "auth.denied");
      expect(denied.length).toBeGreaterThanOrEqual(3);
      expect(JSON.stringify(denied)).not.toContain("wrong-key");
      // /metrics (unauthenticated, like every probe) counts what was answered, by route pattern.
      await api().call("POST", "/v1/tenants", { tenantId: `m-${randomBytes(4).toString("hex")}`, name: "M" });
      const moved = metricDelta(before, await scrapeMetrics(server.url));
      expect(moved("byok_admin_requests_total", { route: "unmatched", status: "401" })).toBe(3);
      expect(moved("byok_admin_requests_total", { route: "POST /v1/tenants", status: "201" })).toBe(1);
      const text = await (await fetch(`${server.url}/metrics`)).text();
      expect(text).toMatch(/^byok_dependency_up\{dependency="postgres"\} 1$/m);
      expect(text).not.toContain(ADMIN_KEY);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    });

    it("sets a route's model catalogue and the tenant's control-plane policy with the CLI, refusing bad ones", async () => {
      const tenant = `cp-${randomBytes(4).toString("hex")}`;
      await cli("tenant", "create", tenant, "--name", "CP");
      const targets = JSON.stringify([{ provider: "openai-chat", model: "m" }]);
      await cli("route", "set", tenant, "m", "--targets", targets, "--catalogue", JSON.stringify({ displayName: "Model M", aliases: ["mm"], efforts: ["low", "high"] }));
      expect((await store.routes.list(tenant))[0]?.catalogue).toMatchObject({ displayName: "Model M", aliases: ["mm"], efforts: ["low", "high"], thinking: false });
      await cli("tenant", "set-policy", tenant, "--json", JSON.stringify({ defaultModel: "m", privacyMode: "enforced" }));
      expect((await store.tenants.get(tenant))?.policy).toEqual({ defaultModel: "m", privacyMode: "enforced" });
      await expect(cli("tenant", "set-policy", tenant, "--json", JSON.stringify({ privacyMode: "sometimes" }))).rejects.toThrow(/400/);
      await expect(cli("route", "set", tenant, "m", "--targets", targets, "--catalogue", JSON.stringify({ baseUrl: "https://x" }))).rejects.toThrow(/400/);
    });

    it("sets up a tenant end to end with the CLI: tenant → user → key → route → credential → price → usage", async () => {
      const tenant = `acme-${randomBytes(4).toString("hex")}`;
      expect(JSON.parse(await cli("tenant", "create", tenant, "--name", "Acme Corp", "--retention", "metadata"))).toMatchObject({ tenant: { tenantId: tenant, retention: "metadata" } });
      await cli("user", "create", tenant, "alice", "--email", "alice@acme.test");
      const created = JSON.parse(await cli("key", "create", tenant, "--name", "alice-laptop", "--user", "alice")) as { key: { keyId: string; prefix: string }; secret: string };
      expect(created.secret).toMatch(/^byok_[0-9a-f]{12}_[0-9a-f]{64}$/);
      expect(await store.apiKeys.verify(created.secret)).toMatchObject({ status: "ok", key: { tenantId: tenant, userId: "alice" } });
      const listed = await cli("key", "list", tenant);
      expect(listed).toContain(created.key.prefix);
      expect(listed).not.toContain(created.secret.slice(-64));

      const targets = JSON.stringify([{ provider: "openai-chat", model: "gpt-4.1", credentialsRef: "openai" }]);
      await cli("route", "set", tenant, "gpt-4.1", "--targets", targets);
      expect(JSON.parse(await cli("route", "list", tenant))).toMatchObject({ routes: [{ modelId: "gpt-4.1", targets: [{ provider: "openai-chat", credentialsRef: "openai" }] }] });

      await cli("credential", "set", tenant, "openai", "--api-key-env", "OPENAI_KEY_FOR_TEST");
      expect(await store.credentials.get(tenant, "openai")).toEqual({ kind: "api_key", apiKey: providerSecret });
      const creds = await cli("credential", "list", tenant);
      expect(creds).toContain('"ref": "openai"');
      expect(creds).not.toContain(providerSecret);

      const model = `gpt-4.1-${tenant}`;
      expect(JSON.parse(await cli("price", "set", "openai-chat", model, "--input", "2", "--output", "8", "--cache-read", "0.5"))).toMatchObject({ price: { version: 1, inputPerMTok: 2_000_000, cacheReadPerMTok: 500_000 } });

      await store.ledger.record({
        tenantId: tenant, userId: "alice", keyId: created.key.keyId, conversationId: "c", requestId: "r", originalRequestId: undefined,
        generation: 1, modelCallId: "m", attempt: 1, provider: "openai-chat", upstreamModel: model, route: "gpt-4.1", credentialsSource: "gateway",
        rawUsage: {}, inputTokens: 1000, outputTokens: 200, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: false,
        priceVersion: 1, costMicroUsd: 3600, ttftMs: 100, ttftOverheadUs: 800, durationMs: 900, outcome: "ok",
      }, new Date("2026-11-02T10:00:00Z"));
      expect(JSON.parse(await cli("usage", tenant, "--from", "2026-11-01", "--user", "alice"))).toMatchObject({ usage: [{ day: "2026-11-02", userId: "alice", model, attempts: 1, inputTokens: 1000, costMicroUsd: 3600 }] });
      const csv = await cli("usage", tenant, "--csv");
      expect(csv.split("\r\n")[0]).toBe("day,tenantId,userId,model,attempts,estimatedAttempts,inputTokens,outputTokens,cacheReadTokens,cacheWriteTokens,reasoningTokens,costMicroUsd");
      expect(csv).toContain(`2026-11-02,${tenant},alice,${model},1,0,1000,200,0,0,0,3600`);

      expect(JSON.parse(await cli("key", "revoke", tenant, created.key.keyId))).toMatchObject({ key: { revokedAt: expect.any(String) } });
      expect((await store.apiKeys.verify(created.secret)).status).toBe("revoked");

      const audit = await store.audit.list({ tenantId: tenant });
      expect(audit.map((e) => e.action).reverse()).toEqual([
        "tenant.create", "user.create", "key.create", "key.list", "route.set", "route.list", "credential.set", "credential.list",
        "usage.read", "usage.read", "key.revoke",
      ]);
      const everything = JSON.stringify(await store.audit.list({ limit: 1000 }));
      expect(everything).not.toContain(providerSecret);
      expect(everything).not.toContain(created.secret.slice(-64));
      expect(everything).not.toContain(ADMIN_KEY);
    });

    it("validates bodies: inline apiKey in a route, unknown fields, bad ids, unknown tenant, duplicates", async () => {
      const tenant = `v-${randomBytes(4).toString("hex")}`;
      const a = api();
      await a.call("POST", "/v1/tenants", { tenantId: tenant, name: "V" });
      await expect(a.call("POST", "/v1/tenants", { tenantId: tenant, name: "V" })).rejects.toThrow(/409/);
      const inline = a.call("PUT", `/v1/tenants/${tenant}/routes/m`, { targets: [{ provider: "openai-chat", model: "x", apiKey: "sk-inline-secret-123" }] });
      await expect(inline).rejects.toThrow(/400.*inline apiKey/);
      await inline.catch((e: unknown) => expect(String(e)).not.toContain("sk-inline-secret-123"));
      await expect(a.call("PUT", `/v1/tenants/${tenant}/routes/m`, { targets: [{ provider: "nope", model: "x" }] })).rejects.toThrow(/400/);
      await expect(a.call("POST", "/v1/tenants", { tenantId: "has space", name: "x" })).rejects.toThrow(/400/);
      await expect(a.call("POST", "/v1/tenants", { tenantId: "x1", name: "x", extra: 1 })).rejects.toThrow(/400/);
      await expect(a.call("GET", "/v1/tenants/nobody-here/keys")).rejects.toThrow(/404/);
      await expect(a.call("POST", `/v1/tenants/${tenant}/keys`, { name: "k", userId: "ghost" })).rejects.toThrow(/404/);
      await expect(a.call("DELETE", "/v1/tenants")).rejects.toThrow(/405/);
      const badJson = await fetch(`${server.url}/v1/tenants`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_KEY}` }, body: '{"tenantId": "sk-leak' });
      expect(badJson.status).toBe(400);
      expect(await badJson.text()).not.toContain("sk-leak");
    });

    it("keeps tenants apart: one tenant's keys, routes, credentials and usage are not another's", async () => {
      const a = api();
      const [t1, t2] = [`i1-${randomBytes(4).toString("hex")}`, `i2-${randomBytes(4).toString("hex")}`];
      for (const t of [t1, t2]) await a.call("POST", "/v1/tenants", { tenantId: t, name: t });
      const { key } = (await a.call("POST", `/v1/tenants/${t1}/keys`, { name: "k" })) as { key: { keyId: string } };
      await a.call("PUT", `/v1/tenants/${t1}/routes/m`, { targets: [{ provider: "anthropic", model: "c" }] });
      await a.call("PUT", `/v1/tenants/${t1}/credentials/r`, { credential: { kind: "api_key", apiKey: "sk-t1-only-000000" } });
      expect(await a.call("GET", `/v1/tenants/${t2}/keys`)).toEqual({ keys: [] });
      expect(await a.call("GET", `/v1/tenants/${t2}/routes`)).toEqual({ routes: [] });
      expect(await a.call("GET", `/v1/tenants/${t2}/credentials`)).toEqual({ credentials: [] });
      await expect(a.call("POST", `/v1/tenants/${t2}/keys/${key.keyId}/revoke`)).rejects.toThrow(/404/);
      await expect(a.call("DELETE", `/v1/tenants/${t2}/credentials/r`)).rejects.toThrow(/404/);
    });

    it("a usage read key reads its own tenant's usage and nothing else: 403 for other tenants, other routes and every mutation; audited, never logged", async () => {
      const a = api();
      const [mine, other] = [`r1-${randomBytes(4).toString("hex")}`, `r2-${randomBytes(4).toString("hex")}`];
      for (const t of [mine, other]) await a.call("POST", "/v1/tenants", { tenantId: t, name: t });
      await a.call("POST", `/v1/tenants/${mine}/users`, { userId: "alice" });
      await expect(cli("key", "create", mine, "--name", "dash", "--user", "alice", "--scope", "usage_read")).rejects.toThrow(/400.*userId/);
      const created = JSON.parse(await cli("key", "create", mine, "--name", "dash", "--scope", "usage_read")) as { key: { keyId: string; scope: string; userId?: string }; secret: string };
      expect(created.key).toMatchObject({ scope: "usage_read" });
      expect(created.key.userId).toBeUndefined();
      const gatewayKey = ((await a.call("POST", `/v1/tenants/${mine}/keys`, { name: "laptop", userId: "alice" })) as { secret: string }).secret;
      // A read key makes no model calls (the gateway verifies gateway-scope keys only), and a gateway key reads no usage.
      expect(await store.apiKeys.verify(created.secret)).toEqual({ status: "invalid" });
      expect((await fetch(`${server.url}/v1/usage`, { headers: { authorization: `Bearer ${gatewayKey}` } })).status).toBe(401);

      const at = new Date("2026-11-05T10:00:00Z");
      const row = (tenantId: string, requestId: string) => ({
        tenantId, userId: "alice", keyId: undefined, conversationId: requestId, requestId, originalRequestId: undefined, generation: 1, modelCallId: "m",
        attempt: 1, provider: "openai-chat", upstreamModel: "gpt-x", route: "gpt-x", credentialsSource: "gateway" as const, rawUsage: {}, inputTokens: 10,
        outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: false, priceVersion: undefined, costMicroUsd: 7,
        ttftMs: 90, ttftOverheadUs: 1_500, durationMs: 200, outcome: "ok" as const,
      });
      await store.ledger.record(row(mine, "q1"), at);
      await store.ledger.record(row(other, "q2"), at);
      await store.ledger.recordRefusal({ tenantId: mine, userId: "alice", keyId: undefined, requestId: "q3", route: "gpt-x", reason: "rate_limited" }, at);

      const reader = createAdminClient(server.url, created.secret);
      const own = (await reader.call("GET", "/v1/usage?from=2026-11-01&to=2026-11-30")) as {
        access: string; tenants: { tenantId: string }[]; usage: { tenantId: string }[]; outcomes: { tenantId: string; overheadAvgUs?: number }[];
        requests: { tenantId: string; day: string; requests: number; refused: number }[];
      };
      expect(own.access).toBe("tenant");
      expect(own.tenants.map((t) => t.tenantId)).toEqual([mine]);
      expect(own.usage.map((u) => u.tenantId)).toEqual([mine]);
      expect(own.outcomes.map((o) => [o.tenantId, o.overheadAvgUs])).toEqual([[mine, 1_500]]);
      expect(own.requests).toEqual([{ tenantId: mine, day: "2026-11-05", requests: 2, refused: 1 }]);
      expect(await reader.call("GET", `/v1/usage?tenant=${mine}&from=2026-11-01`)).toMatchObject({ tenants: [{ tenantId: mine }] });
      expect(await reader.call("GET", `/v1/tenants/${mine}/usage?from=2026-11-01`)).toMatchObject({ usage: [{ tenantId: mine, attempts: 1 }] });
      expect(await reader.text(`/v1/usage?format=csv&from=2026-11-01`)).toContain(`2026-11-05,${mine},alice,gpt-x,1,`);
      // The CLI's usage command works with a read key in GATEWAY_ADMIN_KEY.
      expect(JSON.parse(await runCli(["usage", mine, "--from", "2026-11-01"], { GATEWAY_ADMIN_URL: server.url, GATEWAY_ADMIN_KEY: created.secret }))).toMatchObject({ usage: [{ tenantId: mine }] });

      const forbidden: [string, string, unknown?][] = [
        ["GET", `/v1/usage?tenant=${other}`], ["GET", "/v1/usage?tenant=no-such-tenant"], ["GET", `/v1/tenants/${other}/usage`],
        ["GET", "/v1/tenants"], ["GET", `/v1/tenants/${mine}`], ["GET", `/v1/tenants/${mine}/keys`], ["GET", `/v1/tenants/${mine}/users`],
        ["GET", `/v1/tenants/${mine}/routes`], ["GET", `/v1/tenants/${mine}/credentials`], ["GET", "/v1/prices"], ["GET", `/v1/audit?tenant=${mine}`],
        ["POST", "/v1/tenants", { tenantId: `x-${mine}`, name: "x" }], ["PATCH", `/v1/tenants/${mine}`, { name: "renamed" }],
        ["POST", `/v1/tenants/${mine}/users`, { userId: "mallory" }], ["POST", `/v1/tenants/${mine}/keys`, { name: "more" }],
        ["POST", `/v1/tenants/${mine}/keys/${created.key.keyId}/revoke`], ["PUT", `/v1/tenants/${mine}/routes/m`, { targets: [{ provider: "anthropic", model: "c" }] }],
        ["DELETE", `/v1/tenants/${mine}/routes/gpt-x`], ["PUT", `/v1/tenants/${mine}/credentials/r`, { credential: { kind: "api_key", apiKey: "sk-x-000000" } }],
        ["POST", "/v1/prices", { provider: "p", model: "m", inputPerMTok: 1, outputPerMTok: 1 }],
      ];
      for (const [method, path, body] of forbidden) await expect(reader.call(method, path, body), `${method} ${path}`).rejects.toThrow(/: 403 /);
      expect((await store.tenants.get(mine))?.name).toBe(mine);
      expect((await store.apiKeys.get(mine, created.key.keyId))?.revokedAt).toBeUndefined();
      expect((await store.tenants.listUsers(mine)).map((u) => u.userId)).toEqual(["alice"]);

      const audit = (await store.audit.list({ tenantId: mine, limit: 100 })).filter((e) => e.actor === `read_key:${created.key.keyId}`);
      expect(audit.filter((e) => e.action === "auth.forbidden")).toHaveLength(forbidden.length);
      expect(audit.filter((e) => e.action === "usage.overview").length).toBe(3);
      expect(JSON.stringify(await store.audit.list({ limit: 1000 }))).not.toContain(created.secret.slice(-64));

      // Revoked: refused like a wrong key.
      await a.call("POST", `/v1/tenants/${mine}/keys/${created.key.keyId}/revoke`);
      await expect(reader.call("GET", "/v1/usage")).rejects.toThrow(/401 this usage read key was revoked/);
    });

    it("sets tenant limits and user limits", async () => {
      const a = api();
      const t = `l-${randomBytes(4).toString("hex")}`;
      await cli("tenant", "create", t, "--name", "L");
      const limits = { tenant: { monthlyCostMicroUsd: 100_000_000 }, perUser: { monthlyTokens: 1_000_000 }, rate: { runStartsPerMinute: 60 }, perKeyRate: { tokensPerMinute: 50_000 } };
      expect(JSON.parse(await cli("tenant", "set-limits", t, "--json", JSON.stringify(limits)))).toMatchObject({ tenant: { limits } });
      await a.call("POST", `/v1/tenants/${t}/users`, { userId: "bob" });
      expect(await a.call("PUT", `/v1/tenants/${t}/users/bob/limits`, { limits: { monthlyTokens: 5 } })).toMatchObject({ user: { limits: { monthlyTokens: 5 } } });
      await expect(a.call("PATCH", `/v1/tenants/${t}`, { limits: { tenant: { monthlyCostMicroUsd: -1 } } })).rejects.toThrow(/400/);
    });
  });
}

adminSuite("PGlite", () => createStore({ driver: "pglite", kek: createAesGcmKek(randomBytes(32)) }));

const schema = `admin_test_${randomBytes(6).toString("hex")}`;
adminSuite(
  `Postgres (schema ${schema})`,
  () => createStore({ driver: "postgres", url: DATABASE_URL, schema, kek: createAesGcmKek(randomBytes(32)) }),
  async () => {
    const c = new pg.Client({ connectionString: DATABASE_URL });
    await c.connect();
    try {
      await c.query(`drop schema if exists "${schema}" cascade`);
    } finally {
      await c.end();
    }
  },
);

describe("CLI helpers", () => {
  it("converts USD per million tokens to integer micro-USD", () => {
    expect([usdToMicro("3"), usdToMicro("0.075"), usdToMicro("15.5"), usdToMicro("0.000001")]).toEqual([3_000_000, 75_000, 15_500_000, 1]);
    expect(() => usdToMicro("1e3")).toThrow();
    expect(() => usdToMicro("0.0000001")).toThrow();
  });

  it("explains a missing admin key and unknown commands", async () => {
    await expect(runCli(["tenant", "list"], {})).rejects.toThrow(/GATEWAY_ADMIN_KEY/);
    await expect(runCli(["frobnicate"], { GATEWAY_ADMIN_KEY: "x" })).rejects.toThrow(/unknown command/);
  });
});
