export type { ProviderKind, CredentialsSource, ReasoningEffort, ProviderTarget, ModelCallRequest, ProviderAdapter, TokenCountRequest, VendorPassthrough } from "./provider.js";
export type { ToolSpec, ReasoningPart, ToolCallPart, ChatItem } from "./conversation.js";
export type { TokenCounts, Usage, OutputItem, ProviderEvent, StopReason } from "./events.js";
export { ProviderError, type ProviderErrorKind } from "./provider-error.js";
export type { ClientCredentials, GatewayCredential, ModelParameter } from "./credentials.js";
