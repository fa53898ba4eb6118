/**
 * Tenancy tables: tenants, their users, gateway API keys, per-tenant routes and encrypted
 * provider credentials. Same rules as the rest of the schema: unqualified tables, no
 * foreign keys, tenant_id leading every key (except `tenants` itself and the global
 * `api_keys_prefix_uq` index that authentication looks keys up by before the tenant is known).
 */
import { sql } from "drizzle-orm";
import { check, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { bytea, createdAt, tstz } from "./columns.js";

export const tenants = pgTable(
  "tenants",
  {
    tenantId: text("tenant_id").primaryKey(),
    name: text("name").notNull(),
    /** Conversation content retention: full | metadata | none. */
    retention: text("retention").notNull().default("full"),
    /** Budgets and rate limits (TenantLimits JSON); {} = unlimited. */
    limits: jsonb("limits").$type<Record<string, unknown>>().notNull().default({}),
    /** Control-plane policy (@byok/config TenantPolicy JSON: default model, privacy mode); {} = defaults. */
    policy: jsonb("policy").$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
  },
  (t) => [check("tenants_retention_ck", sql`${t.retention} in ('full', 'metadata', 'none')`)],
);

export const users = pgTable(
  "users",
  {
    tenantId: text("tenant_id").notNull(),
    userId: text("user_id").notNull(),
    externalId: text("external_id"),
    email: text("email"),
    /** Per-user budget overrides (UserLimits JSON); {} = the tenant's per-user defaults. */
    limits: jsonb("limits").$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.userId] }),
    uniqueIndex("users_external_uq").on(t.tenantId, t.externalId).where(sql`${t.externalId} is not null`),
  ],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    tenantId: text("tenant_id").notNull(),
    keyId: text("key_id").notNull(),
    userId: text("user_id"),
    /** Public part of the key (`byok_<prefix>_...`), shown to admins, unique across tenants. */
    prefix: text("prefix").notNull(),
    /** SHA-256 of the secret part (the secret is 256 random bits, so no stretching is needed). */
    hash: bytea("hash").notNull(),
    name: text("name").notNull(),
    /** What the key may do: `gateway` (model calls) or `usage_read` (read its tenant's usage, no user). */
    scope: text("scope").notNull().default("gateway"),
    createdAt: createdAt(),
    expiresAt: tstz("expires_at"),
    revokedAt: tstz("revoked_at"),
    lastUsedAt: tstz("last_used_at"),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.keyId] }),
    uniqueIndex("api_keys_prefix_uq").on(t.prefix),
    check("api_keys_scope_ck", sql`${t.scope} in ('gateway', 'usage_read')`),
  ],
);

export const tenantRoutes = pgTable(
  "tenant_routes",
  {
    tenantId: text("tenant_id").notNull(),
    modelId: text("model_id").notNull(),
    /** RouteTarget[] in the shape of @byok/config's RouteTargetSchema (validated by writers). */
    targets: jsonb("targets").$type<Record<string, unknown>[]>().notNull(),
    /** What the model picker shows (@byok/config RouteCatalogue JSON); {} = the model id only. */
    catalogue: jsonb("catalogue").$type<Record<string, unknown>>().notNull().default({}),
    updatedAt: tstz("updated_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.modelId] })],
);

export const providerCredentials = pgTable(
  "provider_credentials",
  {
    tenantId: text("tenant_id").notNull(),
    ref: text("ref").notNull(),
    /** AES-256-GCM output of the key-encryption key; AAD binds it to (tenant_id, ref). */
    ciphertext: bytea("ciphertext").notNull(),
    iv: bytea("iv").notNull(),
    tag: bytea("tag").notNull(),
    keyVersion: integer("key_version").notNull(),
    updatedAt: tstz("updated_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.ref] }), index("provider_credentials_version_idx").on(t.keyVersion)],
);
