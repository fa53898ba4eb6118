export { createOpenAIChatAdapter } from "./openai-chat/adapter.js";
export { normalizeChatUsage } from "./openai-chat/usage.js";
export { createOpenAIResponsesAdapter } from "./openai-responses/adapter.js";
export { normalizeResponsesUsage } from "./openai-responses/usage.js";
export { createAnthropicAdapter } from "./anthropic/adapter.js";
export { THINKING_BUDGETS } from "./anthropic/request.js";
export { createAzureOpenAIAdapter } from "./azure-openai/adapter.js";
export { createProviderAdapter } from "./factory.js";
export { createAddressGuardedFetch, AddressRefusedError, type AddressGuardOptions, type Resolve } from "./shared/address-guard.js";
export { createBedrockAdapter, BEDROCK_ANTHROPIC_VERSION } from "./bedrock/adapter.js";
export { attemptNamespace, outputItemId } from "./shared/ids.js";
export { parseRetryAfter, MAX_RETRY_AFTER_MS } from "./shared/retry-after.js";
export { redact } from "./shared/redact.js";
export { estimateInputTokens, estimateUsage, OutputMeter, type ModelInput } from "./shared/usage.js";
export { parseAdapterOptions, type AdapterOptions, type ProviderAdapterDeps } from "./shared/options.js";
export {
  DEFAULT_RETRY_POLICY,
  backoffDelay,
  decideRetry,
  retryPolicy,
  type RetryDecision,
  type RetryPhase,
  type RetryPolicy,
} from "./retry.js";
export * from "./routing.js";
export { estimateTokens } from "./shared/tokens.js";
