/**
 * Tenancy wiring shared by the embedded gateway and the provider workers (issue 6):
 * per-tenant routes from the store with their encrypted credentials, the configuration file
 * applied to the default tenant at every start, and the content policy (retention, ghost mode).
 */
import { randomBytes } from "node:crypto";
import type { TargetResolution } from "@byok/agent";
import type { RunPrincipal } from "@byok/bus";
import { RouteCatalogueSchema, RouteTargetSchema, TenantPolicySchema, type GatewayConfig, type RouteConfig, type RouteTargetConfig } from "@byok/config";
import {
  createMemoryBudgetGuard, createMemoryRateLimiter, createRedisBudgetGuard, createRedisRateLimiter, createRunMeter,
  type BudgetGuard, type RateLimiter, type RedisSource, type RunMeterImpl,
} from "@byok/metering";
import { findRoute, resolveRoute, type GatewayCredential, type Route, type RouteRefusal, type RouteTarget } from "@byok/providers";
import type { RunError, RunStart } from "@byok/protocol";
import { createAesGcmKek, createStore, kekFromEnv, KEK_ENV, loadOrCreateFileKek, type GatewayStore, type KeyEncryptionKey } from "@byok/store";
import type { Logger } from "@byok/telemetry";

export interface TenantTargetResolverOptions {
  store: Pick<GatewayStore, "routes" | "credentials">;
  /** Where `apiKeyEnv` / `*Env` references of file routes are read (process.env in services). */
  env: Record<string, string | undefined>;
  allowPrivateBaseUrls: boolean;
  baseUrlAllowList: readonly string[];
  /** Told when a stored credential cannot be opened (never given the secret). */
  onError?: (err: unknown) => void;
}

/** What routing reads of a run (the compatible endpoints ask with a model id only). */
export type RouteAsk = Pick<RunStart, "modelId" | "credentials" | "parameters" | "maxMode">;

type CredRef = { kind: "store"; ref: string } | { kind: "env"; target: RouteTargetConfig };

/**
 * Model routing per tenant: the tenant's stored route for the model id wins (its gateway
 * credentials opened with the KEK, or read from the environment for `apiKeyEnv` targets of the
 * configuration file); without one the run's client credentials decide, as before.
 */
export function createTenantTargetResolver(opts: TenantTargetResolverOptions): (run: RouteAsk, tenantId: string) => Promise<TargetResolution> {
  const baseUrlPolicy = { allowPrivateBaseUrls: opts.allowPrivateBaseUrls, allowList: opts.baseUrlAllowList };
  return async (run, tenantId) => {
    if (!run.modelId) return { ok: false, error: { kind: "bad_model", message: "The run names no model (requested_model.model_id is empty)." } };
    const refs = new Map<string, CredRef>();
    const routes: Route[] = (await opts.store.routes.list(tenantId)).flatMap((r) => {
      const route: Route = {
        modelId: r.modelId,
        targets: r.targets.flatMap((raw, ti): RouteTarget[] => {
          const parsed = RouteTargetSchema.safeParse(raw);
          if (!parsed.success) return [];
          const t = parsed.data;
          let credentials: RouteTarget["credentials"];
          if (t.credentials === "client") credentials = { source: "client" };
          else if (t.credentialsRef !== undefined) {
            const ref = `store:${t.credentialsRef}`;
            refs.set(ref, { kind: "store", ref: t.credentialsRef });
            credentials = { source: "gateway", ref };
          } else {
            const ref = `env:${r.modelId}:${ti}`;
            refs.set(ref, { kind: "env", target: t });
            credentials = { source: "gateway", ref };
          }
          return [toRouteTarget(t, credentials)];
        }),
      };
      // A catalogue alias routes like the model id itself.
      const aliases = RouteCatalogueSchema.safeParse(r.catalogue).data?.aliases ?? [];
      return [route, ...aliases.map((a) => ({ ...route, modelId: a }))];
    });
    // resolveRoute is pure: open the credentials of the matching route first.
    const held = new Map<string, GatewayCredential>();
    const route = findRoute(routes, run.modelId);
    for (const t of route?.targets ?? []) {
      if (t.credentials.source !== "gateway") continue;
      const ref = refs.get(t.credentials.ref);
      if (!ref) continue;
      const cred = ref.kind === "store" ? await openStored(opts, tenantId, ref.ref) : fromEnv(ref.target, opts.env);
      if (cred) held.set(t.credentials.ref, cred);
    }
    const res = resolveRoute(
      { modelId: run.modelId, credentials: run.credentials, parameters: run.parameters, maxMode: run.maxMode },
      { routes, baseUrlPolicy, gatewayCredentials: (ref) => held.get(ref) },
    );
    return res.ok ? { ok: true, targets: res.targets } : { ok: false, error: refusalToRunError(res.refusal) };
  };
}

async function openStored(opts: TenantTargetResolverOptions, tenantId: string, ref: string): Promise<GatewayCredential | undefined> {
  try {
    return await opts.store.credentials.get(tenantId, ref);
  } catch (err) {
    // No KEK, wrong KEK or a damaged row: the target is skipped (failover or a clear refusal).
    opts.onError?.(err);
    return undefined;
  }
}

function fromEnv(t: RouteTargetConfig, env: Record<string, string | undefined>): GatewayCredential | undefined {
  if (t.provider === "bedrock-anthropic") {
    const accessKeyId = t.bedrock?.accessKeyIdEnv ? env[t.bedrock.accessKeyIdEnv] : undefined;
    const secretAccessKey = t.bedrock?.secretAccessKeyEnv ? env[t.bedrock.secretAccessKeyEnv] : undefined;
    return accessKeyId && secretAccessKey ? { kind: "aws", accessKeyId, secretAccessKey } : undefined;
  }
  const apiKey = t.apiKeyEnv ? env[t.apiKeyEnv] : undefined;
  // A keyless target (e.g. a local OpenAI-compatible server) still resolves.
  return { kind: "api_key", apiKey: apiKey ?? "" };
}

function toRouteTarget(t: RouteTargetConfig, credentials: RouteTarget["credentials"]): RouteTarget {
  return {
    kind: t.provider,
    model: t.model,
    ...(t.baseUrl ? { baseUrl: t.baseUrl } : {}),
    credentials,
    ...(t.contextWindow ? { contextWindow: t.contextWindow } : {}),
    ...(t.maxOutputTokens ? { maxOutputTokens: t.maxOutputTokens } : {}),
    ...(t.options ? { options: t.options } : {}),
    ...(t.azure ? { azure: { deployment: t.azure.deployment, ...(t.azure.apiVersion ? { apiVersion: t.azure.apiVersion } : {}) } } : {}),
    ...(t.bedrock ? { bedrock: { region: t.bedrock.region } } : {}),
  };
}

function refusalToRunError(r: RouteRefusal): RunError {
  switch (r.kind) {
    case "base_url_refused":
      return { kind: "base_url_refused", message: r.message };
    case "no_route":
    case "no_credentials":
      return { kind: "bad_model", message: r.message };
  }
}

/**
 * Applies the configuration file's routes to a tenant (the default tenant, at every start):
 * the file wins for the routes it names. An inline `apiKey` is never written to a route row:
 * it is sealed into the tenant's credentials (`file:<modelId>:<index>`) and referenced.
 */
export async function applyFileRoutes(
  store: Pick<GatewayStore, "routes" | "credentials">,
  tenantId: string,
  routes: readonly RouteConfig[],
): Promise<void> {
  const rows: { modelId: string; targets: Record<string, unknown>[]; catalogue?: Record<string, unknown> }[] = [];
  for (const r of routes) {
    const targets: Record<string, unknown>[] = [];
    for (const [i, t] of r.targets.entries()) {
      const { apiKey, ...rest } = t;
      if (apiKey !== undefined && t.credentials === "gateway" && t.credentialsRef === undefined && t.apiKeyEnv === undefined) {
        const ref = `file:${r.modelId}:${i}`;
        await store.credentials.put(tenantId, ref, { kind: "api_key", apiKey });
        targets.push({ ...rest, credentialsRef: ref });
      } else {
        targets.push({ ...rest });
      }
    }
    rows.push({ modelId: r.modelId, targets, ...(r.catalogue ? { catalogue: { ...r.catalogue } } : {}) });
  }
  await store.routes.apply(tenantId, rows);
}

/** Same shapes as @byok/agent's ContentMode / ContentPolicy (libs/agent/src/metering-content.ts). */
export type ContentMode = "store" | "ephemeral" | "ephemeral_keep_conversation";
export interface ContentPolicy {
  modeFor(tenantId: string, principal: RunPrincipal): Promise<ContentMode>;
}

/**
 * Retention and ghost mode (issue 6 §6). Ghost-mode runs, runs of a tenant whose policy
 * enforces privacy mode (as if every request said `x-ghost-mode: true`) and tenants with
 * retention `metadata` / `none` run with content kept in the run's own memory only
 * (`ephemeral`): no history, blob or checkpoint row is written; `metadata` still keeps the
 * conversation row (ids and timestamps). Tenant lookups are cached for `cacheMs`.
 */
export function createStoreContentPolicy(store: Pick<GatewayStore, "tenants">, opts: { cacheMs?: number } = {}): ContentPolicy {
  const cacheMs = opts.cacheMs ?? 5_000;
  const cache = new Map<string, { at: number; retention: "full" | "metadata" | "none"; privacyEnforced: boolean }>();
  return {
    async modeFor(tenantId, principal): Promise<ContentMode> {
      if (principal.ghostMode) return "ephemeral";
      let hit = cache.get(tenantId);
      if (!hit || Date.now() - hit.at > cacheMs) {
        const t = await store.tenants.get(tenantId);
        const privacyEnforced = TenantPolicySchema.safeParse(t?.policy ?? {}).data?.privacyMode === "enforced";
        hit = { at: Date.now(), retention: t?.retention ?? "full", privacyEnforced };
        cache.set(tenantId, hit);
      }
      if (hit.privacyEnforced) return "ephemeral";
      if (hit.retention === "full") return "store";
      return hit.retention === "metadata" ? "ephemeral_keep_conversation" : "ephemeral";
    },
  };
}

/** The KEK of a process: GATEWAY_KEK when set, else the data dir's generated file (embedded only). */
export async function kekFor(config: GatewayConfig, fallback: { dataDir: string } | "ephemeral" | undefined): Promise<KeyEncryptionKey | undefined> {
  if (config.kek !== undefined) return kekFromEnv({ [KEK_ENV]: config.kek });
  if (fallback === "ephemeral") return createAesGcmKek(randomBytes(32));
  if (fallback !== undefined) return loadOrCreateFileKek(fallback.dataDir);
  return undefined;
}

/** Opens the configured store (with its KEK) for a gateway process. */
export async function openGatewayStore(config: GatewayConfig, kek: KeyEncryptionKey | undefined): Promise<GatewayStore> {
  return createStore(
    config.store.driver === "postgres"
      ? { driver: "postgres", url: config.store.url, ...(config.store.schema ? { schema: config.store.schema } : {}), ...(kek ? { kek } : {}) }
      : { driver: "pglite", ...(config.store.dataDir ? { dataDir: config.store.dataDir } : {}), ...(kek ? { kek } : {}) },
  );
}

/**
 * Start-up tenancy steps every process that owns the store runs: ensure the default tenant
 * and apply the configuration file's routes to it (the file wins for the routes it names).
 */
export async function prepareDefaultTenant(store: GatewayStore, config: GatewayConfig): Promise<void> {
  await store.tenants.ensure({ tenantId: config.defaultTenant, name: "Default tenant" });
  await applyFileRoutes(store, config.defaultTenant, config.file.routes);
}

/** The metering engine deps of a process: the run meter and the content policy. */
export function tenancyEngineDeps(opts: {
  store: GatewayStore;
  config: GatewayConfig;
  env: Record<string, string | undefined>;
  budgets: BudgetGuard;
  rates: RateLimiter;
  logger: Logger;
}): { meter: RunMeterImpl; content: ContentPolicy; resolveTargets: (run: RouteAsk, tenantId: string) => Promise<TargetResolution> } {
  const { store, config, logger } = opts;
  return {
    meter: createRunMeter({
      store,
      budgets: opts.budgets,
      rates: opts.rates,
      onError: (err, where) => logger.error({ err: errorName(err), where }, "metering failed"),
    }),
    content: createStoreContentPolicy(store),
    resolveTargets: createTenantTargetResolver({
      store,
      env: opts.env,
      allowPrivateBaseUrls: config.allowPrivateBaseUrls,
      baseUrlAllowList: config.baseUrlAllowList,
      onError: (err) => logger.error({ err: errorName(err) }, "a stored provider credential could not be opened"),
    }),
  };
}

/** Redis budget guard + rate limiter sharing the bus key prefix (distributed mode). */
export function redisMetering(redis: RedisSource, store: GatewayStore, prefix: string): { budgets: BudgetGuard; rates: RateLimiter } {
  return {
    budgets: createRedisBudgetGuard({ redis, prefix, loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) }),
    rates: createRedisRateLimiter({ redis, prefix }),
  };
}

/** In-memory budget guard + rate limiter (embedded mode, one process). */
export function memoryMetering(store: GatewayStore): { budgets: BudgetGuard; rates: RateLimiter } {
  return {
    budgets: createMemoryBudgetGuard({ loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) }),
    rates: createMemoryRateLimiter(),
  };
}

/** Error class/code only: store and KEK errors never carry secrets, but keep logs to the kind. */
function errorName(err: unknown): string {
  if (err instanceof Error) return "code" in err && typeof err.code === "string" ? `${err.name}:${err.code}` : err.name;
  return "unknown";
}
