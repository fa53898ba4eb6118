import { ProviderError, type ProviderTarget } from "@byok/protocol";
import { mapOpenAIError } from "../shared/openai-errors.js";
import { safeMessage } from "../shared/classify.js";
import type { FailureContext } from "../shared/transport.js";

export { mapOpenAIError as mapChatError };

/** How messages name the upstream: "OpenAI", or the compatible endpoint's host (never its full URL, which may carry credentials). */
export function chatProviderName(target: ProviderTarget): string {
  if (!target.baseUrl) return "OpenAI";
  try {
    const host = new URL(target.baseUrl).hostname;
    return host === "api.openai.com" ? "OpenAI" : `the model endpoint at ${host}`;
  } catch {
    return "the model endpoint";
  }
}

/** `finish_reason: "content_filter"`: the provider cut the output under its content policy. */
export function contentFilterError(ctx: FailureContext): ProviderError {
  return new ProviderError("content_policy", safeMessage("content_policy", ctx.provider), { partialUsage: ctx.partialUsage });
}
