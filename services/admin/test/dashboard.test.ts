// The admin service serves the usage dashboard page (the same page the embedded gateway serves,
// driven in Chromium by services/gateway/test/dashboard-browser.test.ts) with its admin API as
// the data source, and `GET /v1/usage` answers the overview the page plots.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAesGcmKek, createStore, type GatewayStore, type LedgerEntry } from "@byok/store";
import { startAdminService, type AdminService } from "../src/index.js";

const ADMIN_KEY = `admin-${randomBytes(12).toString("hex")}`;

function attempt(tenantId: string, requestId: string, outcome: LedgerEntry["outcome"], ttftMs: number | undefined, ttftOverheadUs?: number): LedgerEntry {
  return {
    tenantId, userId: "u1", keyId: undefined, conversationId: requestId, requestId, originalRequestId: undefined, generation: 1, modelCallId: "m1",
    attempt: 1, provider: "anthropic", upstreamModel: "claude-x", route: "claude-x", credentialsSource: "gateway", rawUsage: null, inputTokens: 100,
    outputTokens: 50, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: false, priceVersion: 1, costMicroUsd: 700, ttftMs, ttftOverheadUs, durationMs: 900, outcome,
  };
}

describe("the admin service's usage dashboard", () => {
  let store: GatewayStore;
  let server: AdminService;
  beforeAll(async () => {
    store = await createStore({ driver: "pglite", kek: createAesGcmKek(randomBytes(32)) });
    server = await startAdminService({ store, adminKey: ADMIN_KEY });
    await store.tenants.create({ tenantId: "t1", name: "T1" });
    await store.tenants.create({ tenantId: "t2", name: "T2" });
    await store.ledger.record(attempt("t1", "r1", "ok", 200, 1_100), new Date("2026-11-10T10:00:00Z"));
    await store.ledger.record(attempt("t1", "r2", "failed", undefined), new Date("2026-11-10T11:00:00Z"));
    await store.ledger.record(attempt("t2", "r3", "ok", 400), new Date("2026-11-11T10:00:00Z"));
  });
  afterAll(async () => {
    await server?.close();
    await store?.close();
  });
  const get = (path: string, key: string | null = ADMIN_KEY) =>
    fetch(`${server.url}${path}`, { redirect: "manual", ...(key === null ? {} : { headers: { authorization: `Bearer ${key}` } }) });

  it("serves the page (its admin API on the same origin), its script and uPlot without a key, and holds no data", async () => {
    const page = await get("/dashboard/", null);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<meta name="admin-api-base" content="">');
    expect(html).not.toContain("t1");
    for (const asset of ["app.js", "style.css", "vendor/uPlot.iife.min.js", "vendor/uPlot.min.css"]) expect((await get(`/dashboard/${asset}`, null)).status).toBe(200);
    expect((await get("/dashboard/nope.js", null)).status).toBe(404);
    expect((await get("/dashboard", null)).status).toBe(308);
  });

  it("answers the overview for every tenant or one, as JSON or CSV, only with the admin key, audited", async () => {
    expect((await get("/v1/usage", null)).status).toBe(401);
    const all = (await (await get("/v1/usage?from=2026-11-01&to=2026-11-30")).json()) as {
      access: string; tenants: { tenantId: string }[]; usage: { tenantId: string; attempts: number }[];
      outcomes: { tenantId: string; attempts: number; failed: number; ttftAvgMs?: number; overheadAttempts: number; overheadAvgUs?: number }[];
      requests: { tenantId: string; day: string; requests: number; refused: number }[];
    };
    expect(all.access).toBe("admin");
    expect(all.tenants.map((t) => t.tenantId).sort()).toEqual(["t1", "t2"]);
    expect(all.usage.map((u) => [u.tenantId, u.attempts])).toEqual([["t1", 2], ["t2", 1]]);
    expect(all.outcomes.map((o) => [o.tenantId, o.attempts, o.failed, o.ttftAvgMs])).toEqual([["t1", 2, 1, 200], ["t2", 1, 0, 400]]);
    // The gateway's TTFT overhead: only r1 measured one.
    expect(all.outcomes.map((o) => [o.tenantId, o.overheadAttempts, o.overheadAvgUs])).toEqual([["t1", 1, 1_100], ["t2", 0, undefined]]);
    expect(all.requests).toEqual([{ tenantId: "t1", day: "2026-11-10", requests: 2, refused: 0 }, { tenantId: "t2", day: "2026-11-11", requests: 1, refused: 0 }]);
    const one = (await (await get("/v1/usage?tenant=t2")).json()) as { usage: unknown[] };
    expect(one.usage).toHaveLength(1);
    expect((await get("/v1/usage?tenant=nope")).status).toBe(404);
    expect((await get("/v1/usage?from=November")).status).toBe(400);
    const csv = await (await get("/v1/usage?format=csv&tenant=t1")).text();
    expect(csv.trim().split(/\r?\n/)).toEqual([
      "day,tenantId,userId,model,attempts,estimatedAttempts,inputTokens,outputTokens,cacheReadTokens,cacheWriteTokens,reasoningTokens,costMicroUsd",
      "2026-11-10,t1,u1,claude-x,2,0,200,100,0,0,0,1400",
    ]);
    expect((await store.audit.list()).filter((e) => e.action === "usage.overview").length).toBeGreaterThanOrEqual(4);
  });
});
