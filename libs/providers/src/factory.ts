import type { ProviderAdapter, ProviderKind } from "@byok/protocol";
import type { ProviderAdapterDeps } from "./shared/options.js";
import { createOpenAIChatAdapter } from "./openai-chat/adapter.js";
import { createOpenAIResponsesAdapter } from "./openai-responses/adapter.js";
import { createAnthropicAdapter } from "./anthropic/adapter.js";
import { createAzureOpenAIAdapter } from "./azure-openai/adapter.js";
import { createBedrockAdapter } from "./bedrock/adapter.js";


/** The adapter for `kind` (exhaustive: a new ProviderKind fails to compile until it is added here). */
export function createProviderAdapter(kind: ProviderKind, deps: ProviderAdapterDeps = {}): ProviderAdapter {
  switch (kind) {
    case "openai-chat":
      return createOpenAIChatAdapter(deps);
    case "openai-responses":
      return createOpenAIResponsesAdapter(deps);
    case "anthropic":
      return createAnthropicAdapter(deps);
    case "azure-openai":
      return createAzureOpenAIAdapter(deps);
    case "bedrock-anthropic":
      return createBedrockAdapter(deps);
  }
}
