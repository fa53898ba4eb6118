import { createProviderAdapter, type ProviderAdapter, type ProviderKind } from "@byok/providers";

const KINDS: ProviderKind[] = ["openai-responses", "openai-chat", "anthropic", "azure-openai", "bedrock-anthropic"];

/** One adapter per provider kind, built once per process. */
export function createProviderAdapters(): Record<ProviderKind, ProviderAdapter> {
  return Object.fromEntries(KINDS.map((k) => [k, createProviderAdapter(k)])) as Record<ProviderKind, ProviderAdapter>;
}
