import type { ClientCredentials, GatewayCredential, ModelParameter, ProviderKind, ReasoningEffort } from "@byok/protocol";
import type { BaseUrlPolicy } from "./base-url-policy.js";

/** How a route turns `RequestedModel.parameters` / max mode into provider settings. */
export interface ParameterMapping {
  /** Renames the client's effort for this target (e.g. `{ max: "high" }` for a model without a max level). */
  effort?: Partial<Record<ReasoningEffort, ReasoningEffort>>;
  /** Effort when the client sends none. */
  defaultEffort?: ReasoningEffort;
  /**
   * Client parameter id → request body field, copied into the adapter's `extraBody`
   * (values that parse as JSON are sent parsed: `"0.2"` → 0.2, `"true"` → true).
   */
  passthrough?: Record<string, string>;
  /** Overrides applied when the client asks for max mode. */
  maxMode?: { maxOutputTokens?: number; contextWindow?: number; effort?: ReasoningEffort };
}

/** One upstream a route may use, in failover order. Holds no secrets: credentials are a reference. */
export interface RouteTarget {
  kind: ProviderKind;
  /** Upstream model id; for Azure the deployment name when `azure.deployment` is absent. */
  model: string;
  baseUrl?: string;
  /** `gateway`: a secret the gateway holds (looked up by `ref`); `client`: the caller's BYOK credentials. */
  credentials: { source: "gateway"; ref: string } | { source: "client" };
  contextWindow?: number;
  maxOutputTokens?: number;
  parameters?: ParameterMapping;
  /** Adapter options (see AdapterOptions). */
  options?: Record<string, unknown>;
  azure?: { deployment?: string; apiVersion?: string };
  bedrock?: { region?: string };
}

/** Maps a Cursor model id to targets. `modelId` is exact, or a prefix ending in `*` (`claude-*`); exact beats prefix, longer prefix beats shorter. */
export interface Route {
  modelId: string;
  targets: RouteTarget[];
}

export interface RoutingConfig {
  routes: readonly Route[];
  baseUrlPolicy: BaseUrlPolicy;
  /** Looks up gateway-held credentials by reference (from config or the tenant's encrypted keys). */
  gatewayCredentials?: (ref: string) => GatewayCredential | undefined;
  /** Azure api-version when neither route nor client gives one. Default DEFAULT_AZURE_API_VERSION. */
  azureApiVersion?: string;
}

export interface RouteRequest {
  modelId: string;
  credentials?: ClientCredentials | undefined;
  parameters?: readonly ModelParameter[] | undefined;
  maxMode?: boolean | undefined;
}

/**
 * Why no target could be produced. Suggested end-stream mapping (docs/protocol.md):
 * `no_route` → invalid_argument + ERROR_BAD_MODEL_NAME; `base_url_refused` →
 * permission_denied + ERROR_CUSTOM_MESSAGE; `no_credentials` → failed_precondition +
 * ERROR_BAD_USER_API_KEY (client source) or ERROR_PROVIDER_ERROR (gateway configuration).
 */
export interface RouteRefusal {
  kind: "no_route" | "base_url_refused" | "no_credentials";
  /** Safe for users: never contains a credential. */
  message: string;
}
