/** The admin endpoints. Each sets its audit action/target/details (ids and counts only). */
import type { IncomingMessage } from "node:http";
import type { GatewayStore, TenantRecord, UsageQuery } from "@byok/store";
import * as B from "./bodies.js";
import { toCsv } from "./csv.js";
import { HttpError, readJson } from "./http.js";
import { route, type Route } from "./router.js";

/** Who is calling: the operator (admin key), or a tenant's usage read key. */
export type Caller = { kind: "admin" } | { kind: "tenant_reader"; tenantId: string; keyId: string };

export interface AdminContext {
  caller: Caller;
  store: GatewayStore;
  req: IncomingMessage;
  url: URL;
  audit: { tenantId: string | undefined; action: string; target: string | undefined; details: Record<string, unknown> };
  /** Sets the JSON reply (sent once the audit row is written). */
  reply(status: number, body: unknown): void;
  replyText(status: number, contentType: string, text: string): void;
}

const USAGE_COLUMNS = [
  "day", "tenantId", "userId", "model", "attempts", "estimatedAttempts", "inputTokens", "outputTokens",
  "cacheReadTokens", "cacheWriteTokens", "reasoningTokens", "costMicroUsd",
] as const;

async function tenantOf(ctx: AdminContext, tenantId: string, action: string): Promise<TenantRecord> {
  ctx.audit.tenantId = tenantId;
  ctx.audit.action = action;
  const t = await ctx.store.tenants.get(tenantId);
  if (t === undefined) throw new HttpError(404, `tenant ${tenantId} does not exist`);
  return t;
}

/** A usage read key reads only its own tenant: any other is 403, whether or not it exists. */
function readableTenant(ctx: AdminContext, tenantId: string): void {
  if (ctx.caller.kind === "tenant_reader" && ctx.caller.tenantId !== tenantId) {
    ctx.audit.action = "auth.forbidden";
    ctx.audit.target = tenantId;
    throw new HttpError(403, "a usage read key may only read its own tenant's usage");
  }
}

function usageQuery(q: { from?: string | undefined; to?: string | undefined; user?: string | undefined; model?: string | undefined }): UsageQuery {
  return {
    ...(q.from === undefined ? {} : { from: q.from }),
    ...(q.to === undefined ? {} : { to: q.to }),
    ...(q.user === undefined ? {} : { userId: q.user }),
    ...(q.model === undefined ? {} : { model: q.model }),
  };
}

export function adminRoutes(): Route<AdminContext>[] {
  return [
    route("GET", "/v1/tenants", async (ctx) => {
      ctx.audit.action = "tenant.list";
      ctx.reply(200, { tenants: await ctx.store.tenants.list() });
    }),
    route("POST", "/v1/tenants", async (ctx) => {
      ctx.audit.action = "tenant.create";
      const body = B.parse(B.CreateTenant, await readJson(ctx.req));
      ctx.audit.tenantId = body.tenantId;
      ctx.audit.target = body.tenantId;
      ctx.reply(201, { tenant: await ctx.store.tenants.create(body) });
    }),
    route("GET", "/v1/tenants/:tenant", async (ctx, p) => {
      ctx.reply(200, { tenant: await tenantOf(ctx, p.tenant ?? "", "tenant.get") });
    }),
    route("PATCH", "/v1/tenants/:tenant", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "tenant.update");
      const body = B.parse(B.UpdateTenant, await readJson(ctx.req));
      ctx.audit.details = { fields: Object.keys(body) };
      ctx.reply(200, { tenant: await ctx.store.tenants.update(t.tenantId, body) });
    }),

    route("GET", "/v1/tenants/:tenant/users", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "user.list");
      ctx.reply(200, { users: await ctx.store.tenants.listUsers(t.tenantId) });
    }),
    route("POST", "/v1/tenants/:tenant/users", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "user.create");
      const body = B.parse(B.CreateUser, await readJson(ctx.req));
      ctx.audit.target = body.userId;
      ctx.reply(201, { user: await ctx.store.tenants.createUser({ tenantId: t.tenantId, ...body }) });
    }),
    route("PUT", "/v1/tenants/:tenant/users/:user/limits", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "user.limits");
      ctx.audit.target = p.user;
      const body = B.parse(B.SetUserLimits, await readJson(ctx.req));
      const user = await ctx.store.tenants.setUserLimits(t.tenantId, p.user ?? "", body.limits);
      if (user === undefined) throw new HttpError(404, `user ${p.user} does not exist in tenant ${t.tenantId}`);
      ctx.reply(200, { user });
    }),

    route("GET", "/v1/tenants/:tenant/keys", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "key.list");
      ctx.reply(200, { keys: await ctx.store.apiKeys.list(t.tenantId) });
    }),
    route("POST", "/v1/tenants/:tenant/keys", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "key.create");
      const body = B.parse(B.CreateKey, await readJson(ctx.req));
      if (body.userId !== undefined && (await ctx.store.tenants.getUser(t.tenantId, body.userId)) === undefined) {
        throw new HttpError(404, `user ${body.userId} does not exist in tenant ${t.tenantId}`);
      }
      const expires = body.expiresAt === undefined ? {} : { expiresAt: new Date(body.expiresAt) };
      const { key, secret } = await ctx.store.apiKeys.create(
        body.scope === "usage_read"
          ? { tenantId: t.tenantId, name: body.name, scope: "usage_read", ...expires }
          : { tenantId: t.tenantId, name: body.name, ...(body.userId === undefined ? {} : { userId: body.userId }), ...expires },
      );
      ctx.audit.target = key.keyId;
      ctx.audit.details = { prefix: key.prefix, userId: key.userId ?? null, scope: key.scope };
      ctx.reply(201, { key, secret, note: "The secret is shown once; store it now." });
    }),
    route("POST", "/v1/tenants/:tenant/keys/:key/revoke", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "key.revoke");
      ctx.audit.target = p.key;
      const key = await ctx.store.apiKeys.revoke(t.tenantId, p.key ?? "");
      if (key === undefined) throw new HttpError(404, `key ${p.key} does not exist in tenant ${t.tenantId}`);
      ctx.reply(200, { key });
    }),

    route("GET", "/v1/tenants/:tenant/routes", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "route.list");
      ctx.reply(200, { routes: await ctx.store.routes.list(t.tenantId) });
    }),
    route("PUT", "/v1/tenants/:tenant/routes/:model", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "route.set");
      ctx.audit.target = p.model;
      const body = B.parse(B.SetRoute, await readJson(ctx.req));
      ctx.audit.details = { targets: body.targets.map((x) => ({ provider: x.provider, model: x.model, credentialsRef: x.credentialsRef ?? null })) };
      ctx.reply(200, { route: await ctx.store.routes.set(t.tenantId, p.model ?? "", body.targets, body.catalogue ?? {}) });
    }),
    route("DELETE", "/v1/tenants/:tenant/routes/:model", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "route.delete");
      ctx.audit.target = p.model;
      if (!(await ctx.store.routes.delete(t.tenantId, p.model ?? ""))) throw new HttpError(404, `no route for ${p.model}`);
      ctx.reply(200, { deleted: true });
    }),

    route("GET", "/v1/tenants/:tenant/credentials", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "credential.list");
      ctx.reply(200, { credentials: await ctx.store.credentials.list(t.tenantId) });
    }),
    route("PUT", "/v1/tenants/:tenant/credentials/:ref", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "credential.set");
      ctx.audit.target = p.ref;
      const body = B.parse(B.SetCredential, await readJson(ctx.req));
      ctx.audit.details = { kind: body.credential.kind };
      ctx.reply(200, { credential: await ctx.store.credentials.put(t.tenantId, p.ref ?? "", body.credential) });
    }),
    route("DELETE", "/v1/tenants/:tenant/credentials/:ref", async (ctx, p) => {
      const t = await tenantOf(ctx, p.tenant ?? "", "credential.delete");
      ctx.audit.target = p.ref;
      if (!(await ctx.store.credentials.delete(t.tenantId, p.ref ?? ""))) throw new HttpError(404, `no credential ${p.ref}`);
      ctx.reply(200, { deleted: true });
    }),

    route("GET", "/v1/prices", async (ctx) => {
      ctx.audit.action = "price.list";
      ctx.reply(200, { prices: await ctx.store.prices.list() });
    }),
    route("POST", "/v1/prices", async (ctx) => {
      ctx.audit.action = "price.set";
      const body = B.parse(B.SetPrice, await readJson(ctx.req));
      const price = await ctx.store.prices.set({ ...body, effectiveFrom: body.effectiveFrom === undefined ? undefined : new Date(body.effectiveFrom) });
      ctx.audit.target = `${price.provider}/${price.model}`;
      ctx.audit.details = { version: price.version };
      ctx.reply(201, { price });
    }),

    route("GET", "/v1/tenants/:tenant/usage", async (ctx, p) => {
      readableTenant(ctx, p.tenant ?? "");
      const t = await tenantOf(ctx, p.tenant ?? "", "usage.read");
      const q = B.parse(B.UsageParams, Object.fromEntries(ctx.url.searchParams));
      const rows = await ctx.store.ledger.daily(t.tenantId, usageQuery(q));
      ctx.audit.details = { rows: rows.length, format: q.format };
      if (q.format === "csv") ctx.replyText(200, "text/csv; charset=utf-8", toCsv(rows, USAGE_COLUMNS));
      else ctx.reply(200, { usage: rows });
    }, { tenantReadable: true }),

    // The usage dashboard's data: daily rollups, attempt outcomes (with provider TTFT and the
    // gateway's TTFT overhead), refusals by reason and requests (the refusal rate) of every
    // tenant, or of the one named; a usage read key gets its own tenant's only.
    route("GET", "/v1/usage", async (ctx) => {
      const q = B.parse(B.UsageOverviewParams, Object.fromEntries(ctx.url.searchParams));
      ctx.audit.action = "usage.overview";
      const only = ctx.caller.kind === "tenant_reader" ? ctx.caller.tenantId : q.tenant;
      if (q.tenant !== undefined) readableTenant(ctx, q.tenant);
      const tenants = only === undefined ? await ctx.store.tenants.list() : [await tenantOf(ctx, only, "usage.overview")];
      const query = usageQuery(q);
      const usage = (await Promise.all(tenants.map((t) => ctx.store.ledger.daily(t.tenantId, query)))).flat();
      ctx.audit.details = { tenants: tenants.length, rows: usage.length, format: q.format };
      if (q.format === "csv") return ctx.replyText(200, "text/csv; charset=utf-8", toCsv(usage, USAGE_COLUMNS));
      const outcomes = (await Promise.all(tenants.map((t) => ctx.store.ledger.dailyOutcomes(t.tenantId, query)))).flat();
      const refusals = (await Promise.all(tenants.map((t) => ctx.store.ledger.dailyRefusals(t.tenantId, query)))).flat();
      const requests = (await Promise.all(tenants.map((t) => ctx.store.ledger.dailyRequests(t.tenantId, query)))).flat();
      ctx.reply(200, {
        access: ctx.caller.kind === "tenant_reader" ? "tenant" : "admin",
        tenants: tenants.map((t) => ({ tenantId: t.tenantId, name: t.name })),
        usage,
        outcomes,
        refusals,
        requests,
      });
    }, { tenantReadable: true }),

    route("GET", "/v1/audit", async (ctx) => {
      ctx.audit.action = "audit.read";
      const tenant = ctx.url.searchParams.get("tenant") ?? undefined;
      const limit = Math.min(Number(ctx.url.searchParams.get("limit") ?? 100) || 100, 1000);
      ctx.reply(200, { entries: await ctx.store.audit.list({ ...(tenant === undefined ? {} : { tenantId: tenant }), limit }) });
    }),
  ];
}
