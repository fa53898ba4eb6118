/**
 * Model routing per tenant (issue 6): per-tenant routes from the store with their encrypted
 * credentials, and the configuration file applied to the default tenant at every start.
 */
import type { TargetResolution } from "@byok/agent";
import { RouteCatalogueSchema, RouteTargetSchema, type GatewayConfig, type RouteConfig, type RouteTargetConfig } from "@byok/config";
import { findRoute, resolveRoute, type Route, type RouteRefusal, type RouteTarget } from "@byok/providers";
import type { RunError, RunStart, GatewayCredential } from "@byok/protocol";
import type { GatewayStore } from "@byok/store";

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

/**
 * Start-up tenancy steps every process that owns the store runs: ensure the default tenant
 * and apply the configuration file's routes to it (the file wins for the routes it names).
 */
export async function prepareDefaultTenant(store: GatewayStore, config: GatewayConfig): Promise<void> {
  await store.tenants.ensure({ tenantId: config.defaultTenant, name: "Default tenant" });
  await applyFileRoutes(store, config.defaultTenant, config.file.routes);
}

