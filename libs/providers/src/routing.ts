/** Routing: Cursor model id + client credentials + route table → ordered provider targets (pure). */
export { resolveRoute, findRoute, isOpenAIModelId, DEFAULT_AZURE_API_VERSION, type RouteResolution } from "./routing/resolve.js";
export { checkBaseUrl, isInternalAddress, type BaseUrlPolicy, type BaseUrlVerdict } from "./routing/base-url-policy.js";
export { mapThinkingEffort, wantsMaxMode } from "./routing/parameters.js";
export type {
  ParameterMapping,
  Route,
  RouteRefusal,
  RouteRequest,
  RouteTarget,
  RoutingConfig,
} from "./routing/types.js";
