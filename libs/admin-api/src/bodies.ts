/**
 * Request bodies of the admin API, validated once at the edge (zod). Route targets use
 * @byok/config's RouteTarget shape plus `credentialsRef` (a tenant credential), and refuse
 * an inline `apiKey`: secrets go to /credentials, encrypted, never into a route row.
 */
import { RouteCatalogueSchema, RouteTargetSchema, TenantPolicySchema } from "@byok/config";
import { z } from "zod";
import { HttpError } from "./http.js";

const id = z.string().regex(/^[A-Za-z0-9._:@+-]{1,200}$/, "ids use letters, digits and . _ : @ + - (at most 200)");
const count = z.number().int().nonnegative();
const budget = z.object({ monthlyCostMicroUsd: count.optional(), monthlyTokens: count.optional() }).strict();
const rate = z.object({ runStartsPerMinute: count.optional(), tokensPerMinute: count.optional() }).strict();
const limits = z.object({ tenant: budget.optional(), perUser: budget.optional(), rate: rate.optional(), perKeyRate: rate.optional() }).strict();
const retention = z.enum(["full", "metadata", "none"]);

export const CreateTenant = z.object({ tenantId: id, name: z.string().min(1), retention: retention.optional(), limits: limits.optional() }).strict();
export const UpdateTenant = z
  .object({ name: z.string().min(1).optional(), retention: retention.optional(), limits: limits.optional(), policy: TenantPolicySchema.optional() })
  .strict();
export const CreateUser = z.object({ userId: id, externalId: z.string().min(1).optional(), email: z.string().min(3).optional(), limits: budget.optional() }).strict();
export const SetUserLimits = z.object({ limits: budget }).strict();
export const CreateKey = z
  .object({
    name: z.string().min(1),
    userId: id.optional(),
    expiresAt: z.iso.datetime({ offset: true }).optional(),
    /** `gateway` (default): model calls; `usage_read`: reads the tenant's usage only (the dashboard), no user. */
    scope: z.enum(["gateway", "usage_read"]).default("gateway"),
  })
  .strict()
  .refine((k) => k.scope === "gateway" || k.userId === undefined, { message: "a usage_read key belongs to the tenant, not to a user: leave userId out", path: ["userId"] });

export const TenantRouteTarget = RouteTargetSchema.extend({
  /** Name of a credential set with PUT /credentials/:ref. */
  credentialsRef: id.optional(),
}).refine((t) => t.apiKey === undefined, { message: "inline apiKey is not accepted: store it with PUT /v1/tenants/:t/credentials/:ref and use credentialsRef" });
export const SetRoute = z.object({ targets: z.array(TenantRouteTarget).min(1), catalogue: RouteCatalogueSchema.optional() }).strict();

export const SetCredential = z
  .object({
    credential: z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("api_key"), apiKey: z.string().min(1) }).strict(),
      z.object({ kind: z.literal("aws"), accessKeyId: z.string().min(1), secretAccessKey: z.string().min(1), sessionToken: z.string().min(1).optional() }).strict(),
    ]),
  })
  .strict();

export const SetPrice = z
  .object({
    provider: z.string().min(1),
    model: z.string().min(1),
    inputPerMTok: count,
    outputPerMTok: count,
    cacheReadPerMTok: count.default(0),
    cacheWritePerMTok: count.default(0),
    effectiveFrom: z.iso.datetime({ offset: true }).optional(),
  })
  .strict();

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "days are YYYY-MM-DD (UTC)");
export const UsageParams = z.object({ from: day.optional(), to: day.optional(), user: z.string().optional(), model: z.string().optional(), format: z.enum(["json", "csv"]).default("json") });
/** The usage overview (dashboard): every tenant, or the one named. */
export const UsageOverviewParams = UsageParams.extend({ tenant: z.string().min(1).optional() });

/**
 * Parses `body` or throws a 400 whose message lists the failing paths. Issue messages are
 * zod's generic ones (they never quote the input), so no secret can leak into the reply.
 */
export function parse<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const detail = r.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`).join("; ");
  throw new HttpError(400, detail);
}
