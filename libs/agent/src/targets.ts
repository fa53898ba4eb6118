import type { RouteConfig } from "@byok/config";
import { resolveRoute, type GatewayCredential, type Route, type RouteRefusal } from "@byok/providers";
import type { RunError, RunStart } from "@byok/protocol";
import type { TargetResolution } from "./engine.js";

export interface TargetResolverOptions {
  /** Routes of the configuration file (the default tenant's until tenancy moves them to the store). */
  routes: readonly RouteConfig[];
  /** Where `apiKeyEnv` / `*Env` references are read (process.env in services). */
  env: Record<string, string | undefined>;
  allowPrivateBaseUrls: boolean;
  baseUrlAllowList: readonly string[];
}

/** Gateway-held credentials of a configured target, referenced by route index and target index. */
function credentialRef(routeIndex: number, targetIndex: number): string {
  return `config:${routeIndex}:${targetIndex}`;
}

function toRoutes(routes: readonly RouteConfig[]): Route[] {
  return routes.map((r, ri) => ({
    modelId: r.modelId,
    targets: r.targets.map((t, ti) => ({
      kind: t.provider,
      model: t.model,
      ...(t.baseUrl ? { baseUrl: t.baseUrl } : {}),
      credentials: t.credentials === "client" ? { source: "client" as const } : { source: "gateway" as const, ref: credentialRef(ri, ti) },
      ...(t.contextWindow ? { contextWindow: t.contextWindow } : {}),
      ...(t.maxOutputTokens ? { maxOutputTokens: t.maxOutputTokens } : {}),
      ...(t.options ? { options: t.options } : {}),
      ...(t.azure ? { azure: { deployment: t.azure.deployment, ...(t.azure.apiVersion ? { apiVersion: t.azure.apiVersion } : {}) } } : {}),
      ...(t.bedrock ? { bedrock: { region: t.bedrock.region } } : {}),
    })),
  }));
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
 * Model routing (README "Model routing"): a configured route for the model id wins; without
 * one the run's client credentials decide (requested_model before the legacy model_details).
 */
export function createTargetResolver(opts: TargetResolverOptions): (run: RunStart) => TargetResolution {
  const routes = toRoutes(opts.routes);
  const gatewayCredentials = (ref: string): GatewayCredential | undefined => {
    const m = /^config:(\d+):(\d+)$/.exec(ref);
    const t = m ? opts.routes[Number(m[1])]?.targets[Number(m[2])] : undefined;
    if (!t) return undefined;
    if (t.provider === "bedrock-anthropic") {
      const accessKeyId = t.bedrock?.accessKeyIdEnv ? opts.env[t.bedrock.accessKeyIdEnv] : undefined;
      const secretAccessKey = t.bedrock?.secretAccessKeyEnv ? opts.env[t.bedrock.secretAccessKeyEnv] : undefined;
      return accessKeyId && secretAccessKey ? { kind: "aws", accessKeyId, secretAccessKey } : undefined;
    }
    const apiKey = t.apiKeyEnv ? opts.env[t.apiKeyEnv] : t.apiKey;
    // A keyless target (e.g. a local OpenAI-compatible server) still resolves.
    return { kind: "api_key", apiKey: apiKey ?? "" };
  };
  return (run) => {
    const res = resolveRoute(
      { modelId: run.modelId, credentials: run.credentials, parameters: run.parameters, maxMode: run.maxMode },
      {
        routes,
        baseUrlPolicy: { allowPrivateBaseUrls: opts.allowPrivateBaseUrls, allowList: opts.baseUrlAllowList },
        gatewayCredentials,
      },
    );
    if (!run.modelId) return { ok: false, error: { kind: "bad_model", message: "The run names no model (requested_model.model_id is empty)." } };
    return res.ok ? { ok: true, targets: res.targets } : { ok: false, error: refusalToRunError(res.refusal) };
  };
}
