// Issue 15 item 3: the usage dashboard in a real headless Chromium (Debian's `chromium`,
// driven by playwright-core), served by the embedded gateway and by the admin service (its own
// process, on a private PostgreSQL schema): the page loads behind the admin key, its plots and
// tables show the ledger's numbers for seeded tenants (refusal rate and gateway TTFT overhead
// included), the tenant and date filters change them, CSV export downloads the rollups, and a
// tenant's usage read key sees that tenant only. Screenshots go to test-output/dashboard/ (gitignored).
import { randomBytes } from "node:crypto";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createStore, type DailyUsage, type GatewayStore, type LedgerEntry } from "@byok/store";
import { watchOutput, type ProcessOutput } from "@byok/testing";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCall, startHarness, type Harness } from "./harness.js";

const ADMIN_KEY = "admin-key-for-dashboard-tests-0123456789";
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const OUT = fileURLToPath(new URL("../../../test-output/dashboard/", import.meta.url));
const ADMIN_MAIN = fileURLToPath(new URL("../../admin/src/main.ts", import.meta.url));
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
/** How long the admin process may take to listen (tsx compiles it on a loaded machine). */
const ADMIN_START_MS = 90_000;

interface Shown {
  from: string;
  to: string;
  tenant: string;
  totals: { tokens: number; costMicroUsd: number; attempts: number; failed: number; refused: number; requests: number; refusedRequests: number };
  access: string;
  refusalRate: { labels: string[]; data: (number | null)[][] };
  overhead: { labels: string[]; data: (number | null)[][] };
  tokens: { labels: string[]; data: (number | null)[][] };
  cost: { labels: string[]; data: (number | null)[][] };
  errors: { labels: string[]; data: (number | null)[][] };
  ttft: { labels: string[]; data: (number | null)[][] };
  refusals: { labels: string[]; data: (number | null)[][] };
  topUsers: { tenantId: string; userId: string; tokens: number; costMicroUsd: number; attempts: number }[];
}

function entry(
  tenantId: string, userId: string, n: number, model: string,
  counts: { input: number; output: number; cost: number; ttft: number; overheadUs?: number; outcome?: LedgerEntry["outcome"] },
): LedgerEntry {
  return {
    tenantId, userId, keyId: undefined, conversationId: `c-${n}`, requestId: `r-${tenantId}-${n}`, originalRequestId: undefined, generation: 1,
    modelCallId: "m1", attempt: 1, provider: "openai-chat", upstreamModel: model, route: model, credentialsSource: "gateway", rawUsage: null,
    inputTokens: counts.input, outputTokens: counts.output, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: false,
    priceVersion: 1, costMicroUsd: counts.cost, ttftMs: counts.ttft, ttftOverheadUs: counts.overheadUs, durationMs: counts.ttft * 3, outcome: counts.outcome ?? "ok",
  };
}

const tokensOf = (r: DailyUsage) => r.inputTokens + r.outputTokens + r.cacheReadTokens + r.cacheWriteTokens;

/** The seeded ledger: two tenants, three days of November 2026, one failed attempt. */
async function seed(store: GatewayStore): Promise<void> {
  for (const t of ["acme", "globex"]) if (!(await store.tenants.get(t))) await store.tenants.create({ tenantId: t, name: t });
  const day = (d: number, hour = 12) => new Date(Date.UTC(2026, 10, d, hour));
  const rows: [LedgerEntry, Date][] = [
    [entry("acme", "alice", 1, "model-a", { input: 1000, output: 500, cost: 6000, ttft: 300, overheadUs: 1200 }), day(20)],
    [entry("acme", "alice", 2, "model-b", { input: 400, output: 100, cost: 1500, ttft: 500, overheadUs: 1800 }), day(20, 15)],
    [entry("acme", "bob", 3, "model-a", { input: 2000, output: 1000, cost: 12000, ttft: 200, overheadUs: 800 }), day(21)],
    [entry("acme", "bob", 4, "model-a", { input: 50, output: 0, cost: 100, ttft: 900, outcome: "failed" }), day(21, 13)],
    [entry("globex", "carol", 5, "model-c", { input: 300, output: 100, cost: 900, ttft: 400, overheadUs: 2500 }), day(22)],
  ];
  for (const [e, at] of rows) await store.ledger.record(e, at);
  const refusal = (tenantId: string, n: number, reason: "rate_limited" | "budget_exhausted" | "unknown_model") =>
    ({ tenantId, userId: "bob", keyId: undefined, requestId: `refused-${n}`, route: "model-a", reason });
  await store.ledger.recordRefusal(refusal("acme", 1, "rate_limited"), day(20));
  await store.ledger.recordRefusal(refusal("acme", 2, "rate_limited"), day(20, 14));
  await store.ledger.recordRefusal(refusal("acme", 3, "budget_exhausted"), day(21));
  await store.ledger.recordRefusal(refusal("globex", 4, "unknown_model"), day(22));
}

describe("usage dashboard in headless Chromium", () => {
  let h: Harness;
  let browser: Browser;
  // The admin service as its own process over a private schema holding the same ledger.
  const schema = `t_dashboard_${randomBytes(4).toString("hex")}`;
  let adminStore: GatewayStore | undefined;
  let admin: { child: ReturnType<typeof spawn>; out: ProcessOutput; url: string } | undefined;
  /** acme's usage read key on each server's store. */
  const readKeys = { gateway: "", admin: "" };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's chromium (apt-get install -y chromium; .ci/run does) or set CHROMIUM_PATH`);
    mkdirSync(OUT, { recursive: true });
    h = await startHarness({ GATEWAY_AUTH_MODE: "api_key", GATEWAY_ADMIN_KEY: ADMIN_KEY });
    await seed(h.gw.store);
    adminStore = await createStore({ driver: "postgres", url: DATABASE_URL, schema });
    await seed(adminStore);
    readKeys.gateway = (await h.gw.store.apiKeys.create({ tenantId: "acme", name: "acme-dashboard", scope: "usage_read" })).secret;
    readKeys.admin = (await adminStore.apiKeys.create({ tenantId: "acme", name: "acme-dashboard", scope: "usage_read" })).secret;
    const child = spawn(process.execPath, ["--import", "tsx", ADMIN_MAIN], {
      env: {
        ...process.env, GATEWAY_ADMIN_KEY: ADMIN_KEY, GATEWAY_ADMIN_PORT: "0", DATABASE_URL, GATEWAY_DATABASE_SCHEMA: schema,
        GATEWAY_KEK: randomBytes(32).toString("base64"),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out = watchOutput(child, "admin");
    const line = await out.waitForLine(/admin API listening on (http:\/\/\S+)/, ADMIN_START_MS);
    admin = { child, out, url: /listening on (\S+)/.exec(line)![1]! };
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  }, ADMIN_START_MS + 60_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    if (admin) {
      admin.child.kill("SIGTERM");
      await admin.out.exited;
    }
    await adminStore?.close();
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  });

  /** What the store says for a tenant (or all) and a date range: the numbers the page must show. */
  async function expected(store: GatewayStore, tenant: string | undefined, from: string, to: string) {
    const tenants = tenant ? [tenant] : (await store.tenants.list()).map((t) => t.tenantId);
    const usage = (await Promise.all(tenants.map((t) => store.ledger.daily(t, { from, to })))).flat();
    const outcomes = (await Promise.all(tenants.map((t) => store.ledger.dailyOutcomes(t, { from, to })))).flat();
    const refused = (await Promise.all(tenants.map((t) => store.ledger.dailyRefusals(t, { from, to })))).flat();
    const requests = (await Promise.all(tenants.map((t) => store.ledger.dailyRequests(t, { from, to })))).flat();
    return {
      refused: refused.reduce((n, r) => n + r.rateLimited + r.budgetExhausted + r.unknownModel, 0),
      requests: requests.reduce((n, r) => n + r.requests, 0),
      refusedRequests: requests.reduce((n, r) => n + r.refused, 0),
      tokens: usage.reduce((n, r) => n + tokensOf(r), 0),
      costMicroUsd: usage.reduce((n, r) => n + r.costMicroUsd, 0),
      attempts: outcomes.reduce((n, r) => n + r.attempts, 0),
      failed: outcomes.reduce((n, r) => n + r.failed, 0),
    };
  }

  async function shown(page: Page, want: { from: string; to: string; tenant: string }): Promise<Shown> {
    await page.waitForFunction((w) => {
      const d = (globalThis as unknown as { __dashboard?: { from: string; to: string; tenant: string } }).__dashboard;
      return d !== undefined && d.from === w.from && d.to === w.to && d.tenant === w.tenant;
    }, want, { timeout: 15_000 });
    return page.evaluate(() => (globalThis as unknown as { __dashboard: Shown }).__dashboard);
  }

  async function applyDates(page: Page, from: string, to: string): Promise<void> {
    await page.fill("#from", from);
    await page.fill("#to", to);
    await page.click("#filters button[type=submit]");
  }

  for (const slug of ["gateway", "admin"] as const) {
    it(`${slug === "gateway" ? "embedded gateway" : "admin service"}: loads behind the admin key, shows the ledger's numbers, filters change them, CSV downloads`, async () => {
      const url = slug === "gateway" ? `${h.gw.url}/dashboard/` : `${admin!.url}/dashboard/`;
      const store = slug === "gateway" ? h.gw.store : adminStore!;
      const context = await browser.newContext({ viewport: { width: 1400, height: 1200 }, acceptDownloads: true });
      const page = await context.newPage();
      const problems: string[] = [];
      page.on("pageerror", (e) => problems.push(e.message));
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(m.text());
      });
      try {
        // A wrong key is refused and the login form comes back.
        await page.goto(url);
        await page.fill("#key", "not-the-admin-key-000000");
        await page.click("#login button");
        await expect.poll(() => page.locator("#main").isVisible()).toBe(false);
        expect(await page.locator("#login").isVisible()).toBe(true);
        problems.length = 0; // the refused fetch's 401 console line

        await page.fill("#key", ADMIN_KEY);
        await page.click("#login button");
        await expect.poll(() => page.locator("#main").isVisible()).toBe(true);
        expect(await page.locator("#login").isVisible()).toBe(false);
        await applyDates(page, "2026-11-01", "2026-11-30");
        const all = await shown(page, { from: "2026-11-01", to: "2026-11-30", tenant: "" });
        const wantAll = await expected(store, undefined, "2026-11-01", "2026-11-30");
        expect(all.totals).toEqual(wantAll);
        expect(all.totals).toMatchObject({ tokens: 5450, costMicroUsd: 20500, attempts: 5, failed: 1, refused: 4, requests: 9, refusedRequests: 4 });
        expect(await page.textContent("#total-refused")).toBe("4");
        // Refusal rate: of the requests seen each day (ledger or refusal rows), the refused ones:
        // 2 of 4 on the 20th, 1 of 3 on the 21st, 1 of 2 on the 22nd; 4 of 9 in all.
        expect(all.refusalRate.data[1]!.slice(19, 22)).toEqual([50, 100 / 3, 50]);
        expect(await page.textContent("#total-refusal-rate")).toBe("44.4 %");
        // Gateway TTFT overhead (ms): mean 1.5 and p95 1.77 on the 20th (1.2 and 1.8 ms), 0.8 on the
        // 21st (the failed attempt measured none), 2.5 on the 22nd.
        expect(all.overhead.labels).toEqual(["mean", "p95"]);
        expect(all.overhead.data[1]!.slice(19, 22)).toEqual([1.5, 0.8, 2.5]);
        expect(all.overhead.data[2]!.slice(19, 22)).toEqual([1.77, 0.8, 2.5]);
        // Refusals by reason: two rate limits on the 20th, a budget refusal on the 21st, an unknown model on the 22nd.
        expect(all.refusals.labels).toEqual(["rate limit", "budget", "unknown model"]);
        expect(all.refusals.data.slice(1).map((s) => s.slice(19, 22))).toEqual([[2, 0, 0], [0, 1, 0], [0, 0, 1]]);
        expect(await page.textContent("#total-tokens")).toBe("5,450");
        expect(await page.textContent("#total-cost")).toBe("0.020500");
        expect(await page.textContent("#total-errors")).toBe("20.0 %");
        // Grouped by model: model-a on 2026-11-20 (index 19) is alice's 1500 tokens, on the 21st bob's 3050.
        const a = all.tokens.data[all.tokens.labels.indexOf("model-a") + 1]!;
        expect([a[19], a[20]]).toEqual([1500, 3050]);
        expect(all.errors.data[1]![20]).toBe(50); // one of the two attempts on the 21st failed
        expect(all.ttft.data[1]![19]).toBe(400); // mean of 300 and 500 ms on the 20th
        expect(all.topUsers.map((u) => [u.tenantId, u.userId, u.tokens])).toEqual([["acme", "bob", 3050], ["acme", "alice", 2000], ["globex", "carol", 400]]);
        expect(await page.locator("#top-users tbody tr").count()).toBe(3);
        expect(await page.locator(".uplot canvas").count()).toBe(7);
        await page.screenshot({ path: join(OUT, `${slug}-all-tenants.png`), fullPage: true });

        // Tenant filter.
        await page.selectOption("#tenant", "acme");
        const acme = await shown(page, { from: "2026-11-01", to: "2026-11-30", tenant: "acme" });
        expect(acme.totals).toEqual(await expected(store, "acme", "2026-11-01", "2026-11-30"));
        expect(acme.topUsers.map((u) => u.userId)).toEqual(["bob", "alice"]);
        expect(acme.totals.refused).toBe(3);
        expect(acme.refusalRate.data[1]!.slice(19, 22)).toEqual([50, 100 / 3, null]);
        await page.selectOption("#group", "user");
        await page.waitForFunction(() => (globalThis as unknown as { __dashboard: Shown }).__dashboard.tokens.labels.includes("alice"));
        const byUser = await page.evaluate(() => (globalThis as unknown as { __dashboard: Shown }).__dashboard.tokens);
        expect(byUser.labels).toEqual(["alice", "bob"]);
        await page.screenshot({ path: join(OUT, `${slug}-acme-by-user.png`), fullPage: true });

        // Date filter: only the 21st.
        await applyDates(page, "2026-11-21", "2026-11-21");
        const one = await shown(page, { from: "2026-11-21", to: "2026-11-21", tenant: "acme" });
        expect(one.totals).toEqual(await expected(store, "acme", "2026-11-21", "2026-11-21"));
        expect(one.totals).toMatchObject({ tokens: 3050, attempts: 2, failed: 1 });
        await page.screenshot({ path: join(OUT, `${slug}-acme-one-day.png`), fullPage: true });

        // CSV export of what is shown.
        const [download] = await Promise.all([page.waitForEvent("download"), page.click("#csv")]);
        const csv = readFileSync(await download.path(), "utf8");
        const lines = csv.trim().split(/\r?\n/);
        expect(lines[0]).toBe("day,tenantId,userId,model,attempts,estimatedAttempts,inputTokens,outputTokens,cacheReadTokens,cacheWriteTokens,reasoningTokens,costMicroUsd");
        expect(lines.slice(1)).toEqual(["2026-11-21,acme,bob,model-a,2,0,2050,1000,0,0,0,12100"]);
        expect(problems).toEqual([]);
      } finally {
        await context.close();
      }
    });
  }

  for (const slug of ["gateway", "admin"] as const) {
    it(`${slug === "gateway" ? "embedded gateway" : "admin service"}: acme's usage read key sees acme only`, async () => {
      const url = slug === "gateway" ? `${h.gw.url}/dashboard/` : `${admin!.url}/dashboard/`;
      const store = slug === "gateway" ? h.gw.store : adminStore!;
      const context = await browser.newContext({ viewport: { width: 1400, height: 1200 } });
      const page = await context.newPage();
      const problems: string[] = [];
      page.on("pageerror", (e) => problems.push(e.message));
      try {
        await page.goto(url);
        await page.fill("#key", readKeys[slug]);
        await page.click("#login button");
        await expect.poll(() => page.locator("#main").isVisible()).toBe(true);
        await applyDates(page, "2026-11-01", "2026-11-30");
        const mine = await shown(page, { from: "2026-11-01", to: "2026-11-30", tenant: "acme" });
        expect(mine.access).toBe("tenant");
        // No "all tenants" and no other tenant to choose.
        expect(await page.locator("#tenant option").evaluateAll((os) => os.map((o) => o.getAttribute("value")))).toEqual(["acme"]);
        expect(mine.totals).toEqual(await expected(store, "acme", "2026-11-01", "2026-11-30"));
        expect(mine.totals).toMatchObject({ tokens: 5050, attempts: 4, refused: 3, requests: 7, refusedRequests: 3 });
        expect(mine.topUsers.map((u) => u.tenantId)).toEqual(["acme", "acme"]);
        expect(mine.overhead.data[1]!.slice(19, 22)).toEqual([1.5, 0.8, null]);
        await page.screenshot({ path: join(OUT, `${slug}-acme-read-key.png`), fullPage: true });
        // The key itself reads nothing of globex and changes nothing, even asked directly from the page.
        const statuses = await page.evaluate(async ({ key, base }) => {
          const call = async (method: string, path: string) => (await fetch(base + path, { method, headers: { authorization: `Bearer ${key}` } })).status;
          return [await call("GET", "/v1/usage?tenant=globex"), await call("GET", "/v1/tenants/globex/usage"), await call("GET", "/v1/tenants"), await call("POST", "/v1/tenants/acme/keys")];
        }, { key: readKeys[slug], base: slug === "gateway" ? "/admin" : "" });
        expect(statuses).toEqual([403, 403, 403, 403]);
        expect(problems).toEqual([]);
      } finally {
        await context.close();
      }
    });
  }

  it("the page holds no data and the data needs the admin key", async () => {
    const page = await fetch(`${h.gw.url}/dashboard/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(await page.text()).not.toContain("acme");
    expect((await fetch(`${h.gw.url}/admin/v1/usage`)).status).toBe(401);
    // A usage read key is no gateway key: the compatible endpoints refuse it.
    expect((await fetch(`${h.gw.url}/v1/models`, { headers: { authorization: `Bearer ${readKeys.gateway}` } })).status).toBe(401);
  });
});
