/**
 * The tenancy and metering half of the contract: tenants, users, API keys, routes,
 * encrypted credentials, prices, ledger with rollups, audit. Every driver runs it through a
 * factory (store.test.ts); isolation comes from random ids, so a shared database is fine.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAesGcmKek, isStoreError, KekError, type GatewayStore, type LedgerEntry } from "../src/index.js";

export type GatewayStoreFactory = () => Promise<GatewayStore>;

export function tenancyContract(name: string, factory: GatewayStoreFactory): void {
  describe(`Tenancy and metering contract: ${name}`, () => {
    let store: GatewayStore;
    beforeAll(async () => {
      store = await factory();
    });
    afterAll(async () => {
      await store?.close();
    });

    describe("tenants and users", () => {
      it("creates, reads, lists and updates a tenant; a second create is already_exists", async () => {
        const id = tid();
        const t = await store.tenants.create({ tenantId: id, name: "Acme" });
        expect(t).toMatchObject({ tenantId: id, name: "Acme", retention: "full", limits: {} });
        expect(await store.tenants.get(id)).toEqual(t);
        expect((await store.tenants.list()).map((x) => x.tenantId)).toContain(id);
        const err = await store.tenants.create({ tenantId: id, name: "again" }).catch((e: unknown) => e);
        expect(isStoreError(err, "already_exists")).toBe(true);
        const u = await store.tenants.update(id, { retention: "none", limits: { tenant: { monthlyTokens: 5 } } });
        expect(u).toMatchObject({ retention: "none", limits: { tenant: { monthlyTokens: 5 } }, name: "Acme" });
        expect(await store.tenants.update(tid(), { name: "x" })).toBeUndefined();
      });

      it("ensure creates once and then leaves the tenant as it is", async () => {
        const id = tid();
        await store.tenants.ensure({ tenantId: id, name: "first" });
        await store.tenants.update(id, { retention: "metadata" });
        expect(await store.tenants.ensure({ tenantId: id, name: "second" })).toMatchObject({ name: "first", retention: "metadata" });
      });

      it("rejects an unknown retention policy", async () => {
        const err = await store.tenants.create({ tenantId: tid(), name: "x", retention: "forever" as "full" }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(Error);
      });

      it("scopes users by tenant; ids and external ids are unique within a tenant only", async () => {
        const a = tid();
        const b = tid();
        await store.tenants.create({ tenantId: a, name: "a" });
        await store.tenants.create({ tenantId: b, name: "b" });
        await store.tenants.createUser({ tenantId: a, userId: "u1", externalId: "ext-1", email: "u1@a" });
        await store.tenants.createUser({ tenantId: b, userId: "u1", externalId: "ext-1" });
        const dup = await store.tenants.createUser({ tenantId: a, userId: "u2", externalId: "ext-1" }).catch((e: unknown) => e);
        expect(isStoreError(dup, "already_exists")).toBe(true);
        expect((await store.tenants.getUser(a, "u1"))?.email).toBe("u1@a");
        expect((await store.tenants.getUser(b, "u1"))?.email).toBeUndefined();
        expect((await store.tenants.findUserByExternalId(b, "ext-1"))?.tenantId).toBe(b);
        expect((await store.tenants.listUsers(a)).map((u) => u.userId)).toEqual(["u1"]);
        expect(await store.tenants.setUserLimits(a, "u1", { monthlyCostMicroUsd: 7 })).toMatchObject({ limits: { monthlyCostMicroUsd: 7 } });
        expect(await store.tenants.setUserLimits(a, "nobody", {})).toBeUndefined();
      });
    });

    describe("API keys", () => {
      it("returns the secret once, stores only the prefix publicly, and verifies it", async () => {
        const tenant = tid();
        const { key, secret } = await store.apiKeys.create({ tenantId: tenant, userId: "u", name: "ci" });
        expect(secret).toMatch(/^byok_[0-9a-f]{12}_[0-9a-f]{64}$/);
        expect(secret.startsWith(`byok_${key.prefix}_`)).toBe(true);
        expect(JSON.stringify(await store.apiKeys.list(tenant))).not.toContain(secret.slice(-64));
        const v = await store.apiKeys.verify(secret);
        expect(v).toMatchObject({ status: "ok", key: { tenantId: tenant, keyId: key.keyId, userId: "u" } });
        expect((await store.apiKeys.list(tenant))[0]?.lastUsedAt).toBeInstanceOf(Date);
      });

      it("rejects malformed keys, unknown prefixes and wrong secrets alike", async () => {
        const { secret } = await store.apiKeys.create({ tenantId: tid(), name: "k" });
        const wrongSecret = `${secret.slice(0, -1)}${secret.endsWith("0") ? "1" : "0"}`;
        const unknownPrefix = `byok_${"f".repeat(12)}_${"0".repeat(64)}`;
        for (const bad of ["", "Bearer x", "byok__", secret.toUpperCase(), wrongSecret, unknownPrefix, `${secret}x`]) {
          expect(await store.apiKeys.verify(bad), bad).toEqual({ status: "invalid" });
        }
      });

      it("refuses a revoked key (revocation is idempotent and tenant-scoped)", async () => {
        const tenant = tid();
        const { key, secret } = await store.apiKeys.create({ tenantId: tenant, name: "k" });
        expect(await store.apiKeys.revoke(tid(), key.keyId)).toBeUndefined();
        expect((await store.apiKeys.verify(secret)).status).toBe("ok");
        const revoked = await store.apiKeys.revoke(tenant, key.keyId);
        expect(revoked?.revokedAt).toBeInstanceOf(Date);
        expect((await store.apiKeys.revoke(tenant, key.keyId))?.revokedAt).toEqual(revoked?.revokedAt);
        expect(await store.apiKeys.verify(secret)).toEqual({ status: "revoked", keyId: key.keyId, tenantId: tenant });
      });

      it("refuses an expired key", async () => {
        const tenant = tid();
        const expiresAt = new Date(Date.now() + 60_000);
        const { key, secret } = await store.apiKeys.create({ tenantId: tenant, name: "k", expiresAt });
        expect((await store.apiKeys.verify(secret)).status).toBe("ok");
        expect(await store.apiKeys.verify(secret, new Date(expiresAt.getTime() + 1))).toEqual({ status: "expired", keyId: key.keyId, tenantId: tenant });
      });

      it("verifies a usage_read key only in its scope, and a gateway key only in the gateway scope", async () => {
        const tenant = tid();
        const reader = await store.apiKeys.create({ tenantId: tenant, name: "dashboard", scope: "usage_read" });
        const gateway = await store.apiKeys.create({ tenantId: tenant, name: "laptop", userId: "u" });
        expect(reader.secret).toMatch(/^byok_[0-9a-f]{12}_[0-9a-f]{64}$/);
        expect(reader.key).toMatchObject({ scope: "usage_read", userId: undefined });
        expect(gateway.key.scope).toBe("gateway");
        expect(await store.apiKeys.verify(reader.secret)).toEqual({ status: "invalid" });
        expect(await store.apiKeys.verify(reader.secret, undefined, "gateway")).toEqual({ status: "invalid" });
        expect(await store.apiKeys.verify(gateway.secret, undefined, "usage_read")).toEqual({ status: "invalid" });
        expect(await store.apiKeys.verify(reader.secret, undefined, "usage_read")).toMatchObject({ status: "ok", key: { tenantId: tenant, keyId: reader.key.keyId, scope: "usage_read" } });
        expect((await store.apiKeys.list(tenant)).map((k) => [k.name, k.scope]).sort()).toEqual([["dashboard", "usage_read"], ["laptop", "gateway"]]);
        await store.apiKeys.revoke(tenant, reader.key.keyId);
        expect(await store.apiKeys.verify(reader.secret, undefined, "usage_read")).toEqual({ status: "revoked", keyId: reader.key.keyId, tenantId: tenant });
        expect(await store.apiKeys.verify(reader.secret)).toEqual({ status: "invalid" });
      });

      it("lists only the tenant's keys", async () => {
        const a = tid();
        await store.apiKeys.create({ tenantId: a, name: "one" });
        await store.apiKeys.create({ tenantId: tid(), name: "other" });
        expect((await store.apiKeys.list(a)).map((k) => k.name)).toEqual(["one"]);
      });
    });

    describe("routes", () => {
      it("sets, replaces, lists and deletes per tenant; apply lets the file win for the routes it names", async () => {
        const a = tid();
        const b = tid();
        const t1 = [{ provider: "openai-chat", model: "gpt-x" }];
        const t2 = [{ provider: "anthropic", model: "claude-y", apiKeyEnv: "K" }];
        await store.routes.set(a, "m1", t1);
        await store.routes.set(a, "m2", t1);
        await store.routes.set(b, "m1", t2);
        await store.routes.apply(a, [{ modelId: "m1", targets: t2 }, { modelId: "m3", targets: t2 }]);
        expect((await store.routes.list(a)).map((r) => [r.modelId, r.targets])).toEqual([["m1", t2], ["m2", t1], ["m3", t2]]);
        expect(await store.routes.delete(b, "m2")).toBe(false);
        expect(await store.routes.delete(a, "m2")).toBe(true);
        expect((await store.routes.list(b)).map((r) => r.modelId)).toEqual(["m1"]);
      });
    });

    describe("provider credentials", () => {
      it("round-trips api_key and aws credentials and lists refs without secrets", async () => {
        const tenant = tid();
        const apiKey = `sk-${randomBytes(16).toString("hex")}`;
        await store.credentials.put(tenant, "openai", { kind: "api_key", apiKey });
        await store.credentials.put(tenant, "aws", { kind: "aws", accessKeyId: "AKIA1", secretAccessKey: "s3cr3t-value-xyz", sessionToken: "tok" });
        expect(await store.credentials.get(tenant, "openai")).toEqual({ kind: "api_key", apiKey });
        expect(await store.credentials.get(tenant, "aws")).toEqual({ kind: "aws", accessKeyId: "AKIA1", secretAccessKey: "s3cr3t-value-xyz", sessionToken: "tok" });
        const listed = await store.credentials.list(tenant);
        expect(listed.map((c) => c.ref)).toEqual(["aws", "openai"]);
        expect(JSON.stringify(listed)).not.toContain(apiKey);
        await store.credentials.put(tenant, "openai", { kind: "api_key", apiKey: "sk-rotated-000000" });
        expect(await store.credentials.get(tenant, "openai")).toEqual({ kind: "api_key", apiKey: "sk-rotated-000000" });
        expect(await store.credentials.delete(tenant, "openai")).toBe(true);
        expect(await store.credentials.get(tenant, "openai")).toBeUndefined();
      });

      it("is tenant-scoped", async () => {
        const a = tid();
        await store.credentials.put(a, "ref", { kind: "api_key", apiKey: "sk-aaaaaaaaaaaa" });
        expect(await store.credentials.get(tid(), "ref")).toBeUndefined();
        expect(await store.credentials.delete(tid(), "ref")).toBe(false);
      });
    });

    describe("prices", () => {
      it("versions prices per (provider, model) and answers the one in force at a time", async () => {
        const model = `m-${randomUUID()}`;
        const base = { provider: "openai-chat", model, outputPerMTok: 10_000_000, cacheReadPerMTok: 0, cacheWritePerMTok: 0 };
        const v1 = await store.prices.set({ ...base, inputPerMTok: 1_000_000, effectiveFrom: new Date("2026-01-01T00:00:00Z") });
        const v2 = await store.prices.set({ ...base, inputPerMTok: 2_000_000, effectiveFrom: new Date("2026-06-01T00:00:00Z") });
        expect([v1.version, v2.version]).toEqual([1, 2]);
        expect((await store.prices.at("openai-chat", model, new Date("2026-03-01T00:00:00Z")))?.inputPerMTok).toBe(1_000_000);
        expect((await store.prices.at("openai-chat", model, new Date("2026-07-01T00:00:00Z")))?.version).toBe(2);
        expect(await store.prices.at("openai-chat", model, new Date("2025-01-01T00:00:00Z"))).toBeUndefined();
        expect(await store.prices.at("anthropic", model)).toBeUndefined();
      });

      it("gives concurrent sets distinct versions", async () => {
        const model = `m-${randomUUID()}`;
        const p = { provider: "anthropic", model, inputPerMTok: 1, outputPerMTok: 1, cacheReadPerMTok: 1, cacheWritePerMTok: 1 };
        const made = await Promise.all(Array.from({ length: 5 }, () => store.prices.set(p)));
        expect(made.map((m) => m.version).sort()).toEqual([1, 2, 3, 4, 5]);
      });
    });

    describe("usage ledger", () => {
      it("records one row per attempt, idempotently, with every field", async () => {
        const tenant = tid();
        const e = ledgerEntry(tenant, { rawUsage: { prompt_tokens: 10 }, originalRequestId: "orig-1", priceVersion: 3, ttftMs: 120, ttftOverheadUs: 850 });
        expect(await store.ledger.record(e)).toEqual({ inserted: true });
        expect(await store.ledger.record(e)).toEqual({ inserted: false });
        expect(await store.ledger.record({ ...e, attempt: 2, outcome: "ok" })).toEqual({ inserted: true });
        const rows = await store.ledger.forRequest(tenant, e.requestId);
        expect(rows).toHaveLength(2);
        expect(rows[0]).toEqual({ ...e, createdAt: expect.any(Date) });
        const [day] = await store.ledger.daily(tenant);
        expect(day).toMatchObject({ attempts: 2, inputTokens: 200, outputTokens: 100, costMicroUsd: 2_000, userId: "u1", model: "gpt-x" });
      });

      it("turns a recorded ok into interrupted when a takeover marks that attempt interrupted (its pass runs again), rollup unchanged", async () => {
        const tenant = tid();
        const e = ledgerEntry(tenant, { outcome: "ok" });
        expect(await store.ledger.record(e)).toEqual({ inserted: true });
        // The takeover's mark carries an estimate; the recorded usage stays.
        expect(await store.ledger.record({ ...e, outcome: "interrupted", inputTokens: 0, outputTokens: 1, estimated: true })).toEqual({ inserted: false });
        expect((await store.ledger.forRequest(tenant, e.requestId)).map((r) => [r.outcome, r.inputTokens, r.estimated])).toEqual([["interrupted", e.inputTokens, e.estimated]]);
        expect((await store.ledger.daily(tenant))[0]).toMatchObject({ attempts: 1, inputTokens: e.inputTokens });
        // Any other repeat stays a no-op: a failed row is not changed by a later interrupted mark, nor an interrupted one by ok.
        const f = ledgerEntry(tenant, { requestId: `${e.requestId}-f`, outcome: "failed" });
        await store.ledger.record(f);
        expect(await store.ledger.record({ ...f, outcome: "interrupted" })).toEqual({ inserted: false });
        expect(await store.ledger.record({ ...e, outcome: "ok" })).toEqual({ inserted: false });
        expect((await store.ledger.forRequest(tenant, f.requestId))[0]?.outcome).toBe("failed");
        expect((await store.ledger.forRequest(tenant, e.requestId))[0]?.outcome).toBe("interrupted");
      });

      it("refuses a row of a fenced-out owner (older epoch than the run's latest claim), in the same transaction, counting nothing", async () => {
        const tenant = tid();
        const e = ledgerEntry(tenant);
        await store.claimRun(tenant, { requestId: e.requestId, generation: e.generation, epoch: 2 });
        const err = await store.ledger.record({ ...e, epoch: 1 }).then(() => undefined, (x: unknown) => x);
        expect(isStoreError(err, "fenced")).toBe(true);
        expect(await store.ledger.forRequest(tenant, e.requestId)).toEqual([]);
        expect(await store.ledger.daily(tenant)).toEqual([]);
        expect(await store.ledger.record({ ...e, epoch: 2 })).toEqual({ inserted: true });
      });

      it("keeps ids of another tenant from suppressing a row, and never shows it", async () => {
        const a = tid();
        const b = tid();
        const e = ledgerEntry(a);
        await store.ledger.record(e);
        expect(await store.ledger.record({ ...e, tenantId: b })).toEqual({ inserted: true });
        expect(await store.ledger.forRequest(a, e.requestId)).toHaveLength(1);
        expect((await store.ledger.daily(b))[0]?.tenantId).toBe(b);
      });

      it("counts concurrent duplicate records once, rollups included", async () => {
        const tenant = tid();
        const e = ledgerEntry(tenant);
        const results = await Promise.all(Array.from({ length: 8 }, () => store.ledger.record(e)));
        expect(results.filter((r) => r.inserted)).toHaveLength(1);
        expect((await store.ledger.daily(tenant))[0]?.attempts).toBe(1);
      });

      it("rolls up per UTC day, user and model, with filters, and totals a calendar month", async () => {
        const tenant = tid();
        const at = (iso: string) => new Date(iso);
        await store.ledger.record(ledgerEntry(tenant, { requestId: "r1" }), at("2026-03-31T23:59:59Z"));
        await store.ledger.record(ledgerEntry(tenant, { requestId: "r2" }), at("2026-04-01T00:00:00Z"));
        await store.ledger.record(ledgerEntry(tenant, { requestId: "r3", userId: undefined, estimated: true }), at("2026-04-01T12:00:00Z"));
        await store.ledger.record(ledgerEntry(tenant, { requestId: "r4", upstreamModel: "claude", credentialsSource: "client", costMicroUsd: 0 }), at("2026-04-02T00:00:00Z"));
        const days = await store.ledger.daily(tenant);
        expect(days.map((d) => [d.day, d.userId, d.model, d.attempts, d.estimatedAttempts])).toEqual([
          ["2026-03-31", "u1", "gpt-x", 1, 0],
          ["2026-04-01", undefined, "gpt-x", 1, 1],
          ["2026-04-01", "u1", "gpt-x", 1, 0],
          ["2026-04-02", "u1", "claude", 1, 0],
        ]);
        expect((await store.ledger.daily(tenant, { from: "2026-04-01", to: "2026-04-01" })).length).toBe(2);
        expect((await store.ledger.daily(tenant, { model: "claude" })).map((d) => d.day)).toEqual(["2026-04-02"]);
        expect((await store.ledger.daily(tenant, { userId: "u1", from: "2026-04-01" })).length).toBe(2);
        const april = await store.ledger.monthTotals(tenant, at("2026-04-15T00:00:00Z"));
        expect(april).toEqual({ costMicroUsd: 2_000, tokens: 3 * 150 });
        expect(await store.ledger.monthTotals(tenant, at("2026-04-15T00:00:00Z"), "u1")).toEqual({ costMicroUsd: 1_000, tokens: 300 });
        expect(await store.ledger.monthTotals(tid(), at("2026-04-15T00:00:00Z"))).toEqual({ costMicroUsd: 0, tokens: 0 });
      });

      it("counts outcomes, provider TTFT and gateway TTFT overhead per UTC day, with the same filters", async () => {
        const tenant = tid();
        const at = (iso: string) => new Date(iso);
        await store.ledger.record(ledgerEntry(tenant, { requestId: "o1", ttftMs: 100, ttftOverheadUs: 1_000, outcome: "ok" }), at("2026-05-01T00:00:00Z"));
        await store.ledger.record(ledgerEntry(tenant, { requestId: "o2", ttftMs: 300, ttftOverheadUs: 3_000, outcome: "retried" }), at("2026-05-01T10:00:00Z"));
        await store.ledger.record(ledgerEntry(tenant, { requestId: "o3", ttftMs: undefined, outcome: "failed" }), at("2026-05-01T23:59:59Z"));
        await store.ledger.record(ledgerEntry(tenant, { requestId: "o4", ttftMs: undefined, outcome: "cancelled", upstreamModel: "claude" }), at("2026-05-02T08:00:00Z"));
        const days = await store.ledger.dailyOutcomes(tenant);
        expect(days).toEqual([
          { tenantId: tenant, day: "2026-05-01", attempts: 3, ok: 1, failed: 1, retried: 1, cancelled: 0, interrupted: 0, ttftAvgMs: 200, ttftP95Ms: 290, overheadAttempts: 2, overheadAvgUs: 2_000, overheadP95Us: 2_900 },
          { tenantId: tenant, day: "2026-05-02", attempts: 1, ok: 0, failed: 0, retried: 0, cancelled: 1, interrupted: 0, ttftAvgMs: undefined, ttftP95Ms: undefined, overheadAttempts: 0, overheadAvgUs: undefined, overheadP95Us: undefined },
        ]);
        expect((await store.ledger.dailyOutcomes(tenant, { from: "2026-05-02", to: "2026-05-02" })).map((d) => d.day)).toEqual(["2026-05-02"]);
        expect((await store.ledger.dailyOutcomes(tenant, { to: "2026-05-01" })).map((d) => d.day)).toEqual(["2026-05-01"]);
        expect((await store.ledger.dailyOutcomes(tenant, { model: "claude" })).map((d) => d.attempts)).toEqual([1]);
        expect(await store.ledger.dailyOutcomes(tid())).toEqual([]);
      });

      it("records refusals once per request and reason, and counts them per UTC day by reason", async () => {
        const tenant = tid();
        const at = (iso: string) => new Date(iso);
        const refusal = (requestId: string, reason: "rate_limited" | "budget_exhausted" | "unknown_model", route?: string) =>
          ({ tenantId: tenant, userId: "u1", keyId: undefined, requestId, route, reason });
        expect(await store.ledger.recordRefusal(refusal("q1", "rate_limited"), at("2026-05-01T10:00:00Z"))).toEqual({ inserted: true });
        expect(await store.ledger.recordRefusal(refusal("q1", "rate_limited"), at("2026-05-01T10:00:01Z"))).toEqual({ inserted: false });
        await store.ledger.recordRefusal(refusal("q2", "budget_exhausted", "m"), at("2026-05-01T23:59:59Z"));
        await store.ledger.recordRefusal(refusal("q3", "unknown_model", "nope"), at("2026-05-02T00:00:00Z"));
        expect(await store.ledger.dailyRefusals(tenant)).toEqual([
          { tenantId: tenant, day: "2026-05-01", rateLimited: 1, budgetExhausted: 1, unknownModel: 0 },
          { tenantId: tenant, day: "2026-05-02", rateLimited: 0, budgetExhausted: 0, unknownModel: 1 },
        ]);
        expect((await store.ledger.dailyRefusals(tenant, { from: "2026-05-02" })).map((d) => d.day)).toEqual(["2026-05-02"]);
        expect((await store.ledger.dailyRefusals(tenant, { model: "m" })).map((d) => d.budgetExhausted)).toEqual([1]);
        expect(await store.ledger.dailyRefusals(tid())).toEqual([]);
        await expect(store.ledger.recordRefusal({ ...refusal("q4", "rate_limited"), reason: "bored" as "rate_limited" })).rejects.toThrow();
      });

      it("counts requests and refused requests per UTC day as distinct request ids of the ledger and the refusals (the refusal rate)", async () => {
        const tenant = tid();
        const at = (iso: string) => new Date(iso);
        const attempt = (requestId: string, n: number, over: Partial<LedgerEntry> = {}) => ledgerEntry(tenant, { requestId, attempt: n, ...over });
        const refusal = (requestId: string, reason: "rate_limited" | "budget_exhausted" | "unknown_model", over: { userId?: string; route?: string } = {}) =>
          ({ tenantId: tenant, userId: over.userId ?? "u1", keyId: undefined, requestId, route: over.route, reason });
        // 2026-06-01: r1 (two attempts, one request), r2 (an attempt, then a budget refusal of a later attempt), r3 rate limited, r4 unknown model.
        await store.ledger.record(attempt("r1", 1), at("2026-06-01T01:00:00Z"));
        await store.ledger.record(attempt("r1", 2), at("2026-06-01T01:00:01Z"));
        await store.ledger.record(attempt("r2", 1), at("2026-06-01T02:00:00Z"));
        await store.ledger.recordRefusal(refusal("r2", "budget_exhausted", { route: "gpt-x" }), at("2026-06-01T02:00:01Z"));
        await store.ledger.recordRefusal(refusal("r3", "rate_limited"), at("2026-06-01T03:00:00Z"));
        await store.ledger.recordRefusal(refusal("r4", "unknown_model", { userId: "u2", route: "nope" }), at("2026-06-01T23:59:59Z"));
        // 2026-06-02: r5 only reached a provider (another user); r1's id again (a later turn of the same request id) counts on this day too.
        await store.ledger.record(attempt("r5", 1, { userId: "u2" }), at("2026-06-02T00:00:00Z"));
        await store.ledger.record(attempt("r1", 3), at("2026-06-02T09:00:00Z"));
        expect(await store.ledger.dailyRequests(tenant)).toEqual([
          { tenantId: tenant, day: "2026-06-01", requests: 4, refused: 3 },
          { tenantId: tenant, day: "2026-06-02", requests: 2, refused: 0 },
        ]);
        expect(await store.ledger.dailyRequests(tenant, { from: "2026-06-02", to: "2026-06-02" })).toEqual([{ tenantId: tenant, day: "2026-06-02", requests: 2, refused: 0 }]);
        expect((await store.ledger.dailyRequests(tenant, { userId: "u2" })).map((d) => [d.day, d.requests, d.refused])).toEqual([["2026-06-01", 1, 1], ["2026-06-02", 1, 0]]);
        // model: the upstream model of attempts, the model asked for of refusals.
        expect((await store.ledger.dailyRequests(tenant, { model: "nope" })).map((d) => [d.day, d.requests, d.refused])).toEqual([["2026-06-01", 1, 1]]);
        expect(await store.ledger.dailyRequests(tid())).toEqual([]);
      });

      it("rejects an unknown outcome or credentials source", async () => {
        const e = ledgerEntry(tid(), { outcome: "great" as "ok" });
        await expect(store.ledger.record(e)).rejects.toThrow();
      });
    });

    describe("audit log", () => {
      it("appends and lists newest first, filtered by tenant", async () => {
        const tenant = tid();
        await store.audit.append({ tenantId: tenant, actor: "admin", action: "tenant.create", target: tenant, details: { name: "x" } });
        await store.audit.append({ tenantId: tenant, actor: "admin", action: "key.create", target: "key_1", details: { prefix: "abc" } });
        await store.audit.append({ tenantId: undefined, actor: "admin", action: "price.set", target: undefined, details: {} });
        const mine = await store.audit.list({ tenantId: tenant });
        expect(mine.map((e) => e.action)).toEqual(["key.create", "tenant.create"]);
        expect(mine[0]).toMatchObject({ tenantId: tenant, actor: "admin", target: "key_1", details: { prefix: "abc" } });
      });
    });
  });
}

/** Contract checks that need to build their own store with a specific KEK. */
export function credentialKekContract(name: string, open: (kek: ReturnType<typeof createAesGcmKek> | undefined) => Promise<GatewayStore>): void {
  describe(`credentials and the key-encryption key: ${name}`, () => {
    it("does not open under another key, and refuses credentials without a KEK", async () => {
      const tenant = tid();
      const first = await open(createAesGcmKek(randomBytes(32)));
      await first.credentials.put(tenant, "r", { kind: "api_key", apiKey: "sk-first-key-0000" });
      await first.close();
      const other = await open(createAesGcmKek(randomBytes(32)));
      try {
        await expect(other.credentials.get(tenant, "r")).rejects.toBeInstanceOf(KekError);
      } finally {
        await other.close();
      }
      const none = await open(undefined);
      try {
        const err = await none.credentials.get(tenant, "r").catch((e: unknown) => e);
        expect(isStoreError(err, "no_kek")).toBe(true);
        expect((await none.credentials.list(tenant)).map((c) => c.ref)).toEqual(["r"]);
      } finally {
        await none.close();
      }
    });
  });
}

function tid(): string {
  return `t-${randomUUID()}`;
}

function ledgerEntry(tenantId: string, over: Partial<LedgerEntry> = {}): LedgerEntry {
  return {
    tenantId,
    userId: "u1",
    keyId: "key_1",
    conversationId: "c1",
    requestId: "req-1",
    originalRequestId: undefined,
    generation: 1,
    modelCallId: "mc-1",
    attempt: 1,
    provider: "openai-chat",
    upstreamModel: "gpt-x",
    route: "gpt-x",
    credentialsSource: "gateway",
    rawUsage: undefined,
    inputTokens: 100,
    outputTokens: 50,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 10,
    estimated: false,
    priceVersion: undefined,
    costMicroUsd: 1_000,
    ttftMs: undefined,
    ttftOverheadUs: undefined,
    durationMs: 500,
    outcome: "retried",
    ...over,
  };
}
