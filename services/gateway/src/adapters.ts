import { createOpenAIChatAdapter, type ProviderAdapter, type ProviderKind } from "@byok/providers";

/** The provider adapters this build ships, by kind. */
export function createProviderAdapters(): Partial<Record<ProviderKind, ProviderAdapter>> {
  return { "openai-chat": createOpenAIChatAdapter() };
}
