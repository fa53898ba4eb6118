import type { ClientCredentials, CredentialsSource, GatewayCredential, ProviderKind, ProviderTarget, ReasoningEffort } from "@byok/protocol";
import { checkBaseUrl } from "./base-url-policy.js";
import { mapThinkingEffort, wantsMaxMode } from "./parameters.js";
import type { Route, RouteRefusal, RouteRequest, RouteTarget, RoutingConfig } from "./types.js";

/**
 * Azure OpenAI data-plane api-version used when none is configured: the latest GA version
 * in Microsoft's API version lifecycle (https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle).
 */
export const DEFAULT_AZURE_API_VERSION = "2024-10-21";

export type RouteResolution =
  | { ok: true; source: "route" | "credentials"; targets: ProviderTarget[] }
  | { ok: false; refusal: RouteRefusal };

/** The configured route for `modelId`: exact match first, then the longest matching `prefix*`. */
export function findRoute(routes: readonly Route[], modelId: string): Route | undefined {
  const exact = routes.find((r) => r.modelId === modelId);
  if (exact) return exact;
  let best: Route | undefined;
  for (const r of routes) {
    if (!r.modelId.endsWith("*")) continue;
    const prefix = r.modelId.slice(0, -1);
    if (modelId.startsWith(prefix) && (!best || prefix.length > best.modelId.length - 1)) best = r;
  }
  return best;
}

/** `gpt-…` or `o<digit>…` (o1, o3-mini, o4-mini): OpenAI's own models, served best by the Responses API. */
export function isOpenAIModelId(modelId: string): boolean {
  return /^gpt-/i.test(modelId) || /^o\d/i.test(modelId);
}

function isOpenAIHost(baseUrl: string | undefined): boolean {
  if (!baseUrl) return true;
  try {
    return new URL(baseUrl).hostname.toLowerCase() === "api.openai.com";
  } catch {
    return false;
  }
}

function refuse(kind: RouteRefusal["kind"], message: string): RouteResolution {
  return { ok: false, refusal: { kind, message } };
}

/** Passthrough parameter values: JSON when they parse (numbers, booleans), the raw string otherwise. */
function parameterValue(v: string): unknown {
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
}

function effortFor(req: RouteRequest, rt: RouteTarget | undefined, maxMode: boolean): ReasoningEffort | undefined {
  const m = rt?.parameters;
  if (maxMode && m?.maxMode?.effort) return m.maxMode.effort;
  const asked = mapThinkingEffort(req.parameters);
  if (asked) return m?.effort?.[asked] ?? asked;
  return m?.defaultEffort;
}

function routeOptions(req: RouteRequest, rt: RouteTarget): Record<string, unknown> | undefined {
  const pass = rt.parameters?.passthrough;
  if (!pass) return rt.options;
  const extra: Record<string, unknown> = {};
  for (const p of req.parameters ?? []) {
    const field = pass[p.id];
    if (field) extra[field] = parameterValue(p.value);
  }
  if (Object.keys(extra).length === 0) return rt.options;
  const base = rt.options ?? {};
  const baseExtra = typeof base["extraBody"] === "object" && base["extraBody"] !== null ? (base["extraBody"] as Record<string, unknown>) : {};
  return { ...base, extraBody: { ...baseExtra, ...extra } };
}

type Built = { target: ProviderTarget } | { refusal: RouteRefusal };

function fromRouteTarget(req: RouteRequest, rt: RouteTarget, config: RoutingConfig, maxMode: boolean): Built {
  const creds = req.credentials;
  const base: ProviderTarget = {
    kind: rt.kind,
    model: rt.model,
    credentialsSource: rt.credentials.source,
    ...(rt.baseUrl ? { baseUrl: rt.baseUrl } : {}),
  };
  const cw = maxMode ? (rt.parameters?.maxMode?.contextWindow ?? rt.contextWindow) : rt.contextWindow;
  const mot = maxMode ? (rt.parameters?.maxMode?.maxOutputTokens ?? rt.maxOutputTokens) : rt.maxOutputTokens;
  if (cw) base.contextWindow = cw;
  if (mot) base.maxOutputTokens = mot;
  const options = routeOptions(req, rt);
  if (options) base.options = options;
  const effort = effortFor(req, rt, maxMode);
  if (effort) base.reasoningEffort = effort;

  let gateway: GatewayCredential | undefined;
  if (rt.credentials.source === "gateway") {
    gateway = config.gatewayCredentials?.(rt.credentials.ref);
    if (!gateway) return { refusal: { kind: "no_credentials", message: `The gateway has no credentials configured for model ${req.modelId}; an administrator must add them` } };
  }

  switch (rt.kind) {
    case "azure-openai": {
      const clientAzure = creds?.kind === "azure" ? creds : undefined;
      const apiKey = gateway?.kind === "api_key" ? gateway.apiKey : clientAzure?.apiKey;
      if (!apiKey) return { refusal: noCredentials(req.modelId, rt.credentials.source, "Azure OpenAI") };
      let endpoint = rt.baseUrl;
      if (!endpoint && clientAzure) {
        const verdict = checkBaseUrl(clientAzure.baseUrl, config.baseUrlPolicy);
        if (!verdict.ok) return { refusal: { kind: "base_url_refused", message: `Base URL refused: ${verdict.reason}` } };
        endpoint = clientAzure.baseUrl;
        base.clientSentUrl = true;
      }
      if (!endpoint) return { refusal: { kind: "no_route", message: `No Azure endpoint is configured for model ${req.modelId}` } };
      const deployment = rt.azure?.deployment ?? (rt.model || clientAzure?.deployment || "");
      base.apiKey = apiKey;
      base.model = deployment;
      base.azure = {
        endpoint,
        deployment,
        apiVersion: rt.azure?.apiVersion ?? clientAzure?.apiVersion ?? config.azureApiVersion ?? DEFAULT_AZURE_API_VERSION,
      };
      delete base.baseUrl;
      return { target: base };
    }
    case "bedrock-anthropic": {
      const clientAws = creds?.kind === "bedrock" ? creds : undefined;
      const aws =
        gateway?.kind === "aws"
          ? { accessKeyId: gateway.accessKeyId, secretAccessKey: gateway.secretAccessKey, sessionToken: gateway.sessionToken }
          : clientAws
            ? { accessKeyId: clientAws.accessKey, secretAccessKey: clientAws.secretKey, sessionToken: clientAws.sessionToken }
            : undefined;
      const region = rt.bedrock?.region ?? clientAws?.region;
      if (!aws || (rt.credentials.source === "gateway" && gateway?.kind !== "aws")) {
        return { refusal: noCredentials(req.modelId, rt.credentials.source, "AWS Bedrock") };
      }
      if (!region) return { refusal: { kind: "no_route", message: `No AWS region is configured for model ${req.modelId}` } };
      if (!rt.bedrock?.region && !rt.baseUrl) base.clientSentUrl = true;
      base.bedrock = { region, accessKeyId: aws.accessKeyId, secretAccessKey: aws.secretAccessKey, ...(aws.sessionToken ? { sessionToken: aws.sessionToken } : {}) };
      return { target: base };
    }
    default: {
      const apiKey = gateway ? (gateway.kind === "api_key" ? gateway.apiKey : undefined) : creds?.kind === "api_key" ? creds.apiKey : undefined;
      if (!apiKey) return { refusal: noCredentials(req.modelId, rt.credentials.source, "this provider") };
      base.apiKey = apiKey;
      return { target: base };
    }
  }
}

function noCredentials(modelId: string, source: CredentialsSource, what: string): RouteRefusal {
  return source === "client"
    ? { kind: "no_credentials", message: `Model ${modelId} is configured to use your own ${what} credentials; add them in Cursor's model settings` }
    : { kind: "no_credentials", message: `The gateway's credentials for model ${modelId} do not fit ${what}; an administrator must fix the route` };
}

function fromClientCredentials(req: RouteRequest, creds: ClientCredentials, config: RoutingConfig, maxMode: boolean): Built {
  const effort = effortFor(req, undefined, maxMode);
  const withEffort = (t: ProviderTarget): ProviderTarget => (effort ? { ...t, reasoningEffort: effort } : t);
  switch (creds.kind) {
    case "azure": {
      const verdict = checkBaseUrl(creds.baseUrl, config.baseUrlPolicy);
      if (!verdict.ok) return { refusal: { kind: "base_url_refused", message: `Base URL refused: ${verdict.reason}` } };
      return {
        target: withEffort({
          kind: "azure-openai",
          model: creds.deployment,
          apiKey: creds.apiKey,
          azure: { endpoint: creds.baseUrl, deployment: creds.deployment, apiVersion: creds.apiVersion ?? config.azureApiVersion ?? DEFAULT_AZURE_API_VERSION },
          credentialsSource: "client",
          clientSentUrl: true,
        }),
      };
    }
    case "bedrock":
      return {
        target: withEffort({
          kind: "bedrock-anthropic",
          model: req.modelId,
          bedrock: {
            region: creds.region,
            accessKeyId: creds.accessKey,
            secretAccessKey: creds.secretKey,
            ...(creds.sessionToken ? { sessionToken: creds.sessionToken } : {}),
          },
          credentialsSource: "client",
          // The region is part of the endpoint's host name.
          clientSentUrl: true,
        }),
      };
    case "api_key": {
      const baseUrl = creds.baseUrl?.trim() || undefined;
      if (baseUrl) {
        const verdict = checkBaseUrl(baseUrl, config.baseUrlPolicy);
        if (!verdict.ok) return { refusal: { kind: "base_url_refused", message: `Base URL refused: ${verdict.reason}` } };
      }
      let kind: ProviderKind;
      if (/^claude/i.test(req.modelId)) kind = "anthropic";
      else if (isOpenAIModelId(req.modelId) && isOpenAIHost(baseUrl)) kind = "openai-responses";
      else kind = "openai-chat";
      return {
        target: withEffort({
          kind,
          model: req.modelId,
          apiKey: creds.apiKey,
          ...(baseUrl ? { baseUrl, clientSentUrl: true } : {}),
          credentialsSource: "client",
        }),
      };
    }
  }
}

/**
 * Resolves a Cursor model id to ordered provider targets (failover order; the engine fails
 * over only before the first output).
 *
 * Precedence: a configured route for the model id wins (client credentials then only supply
 * keys for targets marked `client`); otherwise the client's credentials decide: Azure →
 * `azure-openai`, Bedrock → `bedrock-anthropic`, API key → `claude*` Anthropic Messages,
 * `gpt-*`/`o<digit>*` on OpenAI's own endpoint (or no base URL) → Responses, anything else →
 * Chat Completions at the base URL. Client-sent base URLs pass the base-URL policy first.
 * A route target that cannot be built (missing credentials) is skipped; the first refusal is
 * returned when none can. Pure: no I/O, no clock.
 */
export function resolveRoute(req: RouteRequest, config: RoutingConfig): RouteResolution {
  const maxMode = wantsMaxMode(req.maxMode, req.parameters);
  const route = findRoute(config.routes, req.modelId);
  if (route) {
    const targets: ProviderTarget[] = [];
    let firstRefusal: RouteRefusal | undefined;
    for (const rt of route.targets) {
      const built = fromRouteTarget(req, rt, config, maxMode);
      if ("target" in built) targets.push(built.target);
      else firstRefusal ??= built.refusal;
    }
    if (targets.length > 0) return { ok: true, source: "route", targets };
    return { ok: false, refusal: firstRefusal ?? { kind: "no_route", message: `The route for model ${req.modelId} has no targets` } };
  }
  if (!req.credentials) {
    return refuse("no_route", `Model ${req.modelId} is not configured on this gateway and no API key was sent for it`);
  }
  const built = fromClientCredentials(req, req.credentials, config, maxMode);
  return "target" in built ? { ok: true, source: "credentials", targets: [built.target] } : { ok: false, refusal: built.refusal };
}
