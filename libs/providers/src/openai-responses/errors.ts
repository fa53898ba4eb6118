import { ProviderError } from "@byok/protocol";
import { mapOpenAIError } from "../shared/openai-errors.js";
import { safeMessage, vendorError } from "../shared/classify.js";
import type { FailureContext } from "../shared/transport.js";

export { mapOpenAIError as mapResponsesError };

/** `response.failed`: the error object inside the failed response, classified like an in-stream error. */
export function failedResponseError(error: { code?: unknown; message?: unknown } | null | undefined, ctx: FailureContext): ProviderError {
  const code = typeof error?.code === "string" ? error.code : undefined;
  const message = typeof error?.message === "string" ? error.message : undefined;
  return vendorError({ status: undefined, code, type: code, message }, ctx.provider, ctx.secrets, new Error(`response.failed: ${code ?? "unknown"}`), ctx.partialUsage);
}

/** `response.incomplete` with reason `content_filter`. */
export function incompleteContentFilterError(ctx: FailureContext): ProviderError {
  return new ProviderError("content_policy", safeMessage("content_policy", ctx.provider), { partialUsage: ctx.partialUsage });
}
