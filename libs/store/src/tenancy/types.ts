import type { GatewayCredential } from "@byok/protocol";

/**
 * Tenancy repositories: tenants and users, gateway API keys, per-tenant routes and
 * encrypted provider credentials. Every method but the tenant listing and API-key
 * verification takes the tenant id and touches that tenant's rows only.
 */

export type RetentionPolicy = "full" | "metadata" | "none";

/** Monthly (UTC calendar month) budgets; an absent field means no limit. */
export interface BudgetLimits {
  /** Cost limit in micro-USD (gateway-credential runs only). */
  monthlyCostMicroUsd?: number;
  /** Token limit (input + output + cache read + cache write), all runs. */
  monthlyTokens?: number;
}

/** Per-minute rate limits; an absent field means no limit. */
export interface RateLimits {
  runStartsPerMinute?: number;
  tokensPerMinute?: number;
}

/** A tenant's budgets and rate limits, stored as JSON on the tenant row. */
export interface TenantLimits {
  tenant?: BudgetLimits;
  /** Default budget of each user of the tenant (a user's own `limits` override it). */
  perUser?: BudgetLimits;
  rate?: RateLimits;
  /** Rate limits of each gateway API key. */
  perKeyRate?: RateLimits;
}

export interface TenantRecord {
  tenantId: string;
  name: string;
  retention: RetentionPolicy;
  limits: TenantLimits;
  /** Control-plane policy in @byok/config's TenantPolicy shape, validated by the writer; {} = defaults. */
  policy: Record<string, unknown>;
  createdAt: Date;
}

export interface UserRecord {
  tenantId: string;
  userId: string;
  externalId: string | undefined;
  email: string | undefined;
  limits: BudgetLimits;
  createdAt: Date;
}

export interface TenantRepository {
  /** Creates the tenant; StoreError "already_exists" if the id is taken. */
  create(t: { tenantId: string; name: string; retention?: RetentionPolicy; limits?: TenantLimits }): Promise<TenantRecord>;
  /** Creates the tenant when missing, leaves an existing one untouched (start-up default tenant). */
  ensure(t: { tenantId: string; name: string }): Promise<TenantRecord>;
  get(tenantId: string): Promise<TenantRecord | undefined>;
  /** Every tenant, by id. An operator-only listing. */
  list(): Promise<TenantRecord[]>;
  /** Changes retention, limits and/or policy; undefined if the tenant does not exist. */
  update(
    tenantId: string,
    patch: { name?: string; retention?: RetentionPolicy; limits?: TenantLimits; policy?: Record<string, unknown> },
  ): Promise<TenantRecord | undefined>;

  /** Creates a user of the tenant; StoreError "already_exists" for a taken id or external id. */
  createUser(u: { tenantId: string; userId: string; externalId?: string; email?: string; limits?: BudgetLimits }): Promise<UserRecord>;
  getUser(tenantId: string, userId: string): Promise<UserRecord | undefined>;
  findUserByExternalId(tenantId: string, externalId: string): Promise<UserRecord | undefined>;
  listUsers(tenantId: string): Promise<UserRecord[]>;
  setUserLimits(tenantId: string, userId: string, limits: BudgetLimits): Promise<UserRecord | undefined>;
}

/**
 * What a key may do: `gateway` keys make model calls (Cursor protocol, compatible endpoints);
 * `usage_read` keys only read their tenant's usage through the admin API (the dashboard) and
 * have no user. Each verifies only in its own scope.
 */
export type ApiKeyScope = "gateway" | "usage_read";

/** What admins see of a key: never the secret or its hash. */
export interface ApiKeyRecord {
  tenantId: string;
  keyId: string;
  userId: string | undefined;
  scope: ApiKeyScope;
  /** Public prefix, e.g. `byok_3fa9c2d1e0b4_…` shows as `3fa9c2d1e0b4`. */
  prefix: string;
  name: string;
  createdAt: Date;
  expiresAt: Date | undefined;
  revokedAt: Date | undefined;
  lastUsedAt: Date | undefined;
}

export type ApiKeyVerification =
  | { status: "ok"; key: ApiKeyRecord }
  /** Malformed, unknown prefix, or wrong secret: indistinguishable on purpose. */
  | { status: "invalid" }
  | { status: "expired"; keyId: string; tenantId: string }
  | { status: "revoked"; keyId: string; tenantId: string };

export interface ApiKeyRepository {
  /**
   * Creates a key and returns it with its full secret, which is stored only as a SHA-256
   * hash and can never be read again. `expiresAt` undefined = never expires.
   */
  create(
    k: { tenantId: string; name: string; expiresAt?: Date } & ({ scope?: "gateway"; userId?: string } | { scope: "usage_read" }),
  ): Promise<{ key: ApiKeyRecord; secret: string }>;
  list(tenantId: string): Promise<ApiKeyRecord[]>;
  /** One key of the tenant (status fields included); undefined if unknown in this tenant. */
  get(tenantId: string, keyId: string): Promise<ApiKeyRecord | undefined>;
  /** Marks the key revoked (idempotent: the first revocation time stays). undefined if unknown in this tenant. */
  revoke(tenantId: string, keyId: string): Promise<ApiKeyRecord | undefined>;
  /**
   * Checks a presented `byok_<prefix>_<secret>` key: looks the prefix up (across tenants:
   * the prefix is what names the tenant), compares hashes in constant time, then checks
   * revocation and expiry at `now`. On success bumps last_used_at (at most once a minute).
   * Only keys of `scope` (default `gateway`) match: a key of another scope is `invalid`.
   */
  verify(presented: string, now?: Date, scope?: ApiKeyScope): Promise<ApiKeyVerification>;
}

/** A route as stored: targets in @byok/config's RouteTarget shape, validated by the writer. */
export interface TenantRouteRecord {
  tenantId: string;
  modelId: string;
  targets: Record<string, unknown>[];
  /** @byok/config's RouteCatalogue shape, validated by the writer; {} = none given. */
  catalogue: Record<string, unknown>;
  updatedAt: Date;
}

export interface RouteRepository {
  /** Creates or replaces the tenant's route for `modelId` (catalogue default {}). */
  set(tenantId: string, modelId: string, targets: Record<string, unknown>[], catalogue?: Record<string, unknown>): Promise<TenantRouteRecord>;
  /**
   * Applies a configuration file's routes to a tenant in one transaction: every named route
   * is replaced (the file wins), routes the file does not name stay.
   */
  apply(tenantId: string, routes: readonly { modelId: string; targets: Record<string, unknown>[]; catalogue?: Record<string, unknown> }[]): Promise<void>;
  list(tenantId: string): Promise<TenantRouteRecord[]>;
  /** True if a route was removed. */
  delete(tenantId: string, modelId: string): Promise<boolean>;
}

export interface CredentialInfo {
  tenantId: string;
  ref: string;
  keyVersion: number;
  updatedAt: Date;
}

/**
 * Provider credentials, sealed with the key-encryption key given to createStore (AES-256-GCM,
 * AAD = tenant and ref): the table holds ciphertext, iv, tag and key version, never plaintext.
 * Without a KEK, put/get throw StoreError "no_kek".
 */
export interface CredentialRepository {
  put(tenantId: string, ref: string, credential: GatewayCredential): Promise<CredentialInfo>;
  /** Decrypts; undefined if absent. Throws KekError if the row does not open under the KEK. */
  get(tenantId: string, ref: string): Promise<GatewayCredential | undefined>;
  /** Refs and versions only, never secrets. */
  list(tenantId: string): Promise<CredentialInfo[]>;
  delete(tenantId: string, ref: string): Promise<boolean>;
}
