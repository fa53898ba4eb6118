import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "@anthropic-ai/sdk";
import { ProviderError } from "@byok/protocol";
import { safeMessage, vendorError } from "../shared/classify.js";
import { parseRetryAfter } from "../shared/retry-after.js";
import { cancelledError, isMalformedStreamError, malformedError, networkError, timeoutError, type FailureContext } from "../shared/transport.js";
import { isRecord } from "../shared/usage.js";

/** The `error` object of an Anthropic error body (`{type: "error", error: {type, message}}`), or Bedrock's `{message}`. */
function errorObject(body: unknown): Record<string, unknown> | undefined {
  if (!isRecord(body)) return undefined;
  return isRecord(body["error"]) ? body["error"] : body;
}

/** Bedrock names the exception in `x-amzn-errortype: ThrottlingException:http://…`. */
function amznErrorType(headers: Headers | undefined): string | undefined {
  const v = headers?.get("x-amzn-errortype");
  return v ? v.split(":")[0] : undefined;
}

/**
 * Maps anything `@anthropic-ai/sdk` / `@anthropic-ai/bedrock-sdk` throws to a ProviderError:
 * caller aborts first, then API errors from status + `error.type` (+ Bedrock exception types,
 * which arrive as stream `error` events or the `x-amzn-errortype` header), then transport.
 */
export function mapAnthropicError(err: unknown, ctx: FailureContext, now: () => number = Date.now): ProviderError {
  if (err instanceof ProviderError) return err;
  if (ctx.signal.aborted || err instanceof APIUserAbortError) return cancelledError(ctx, err);
  if (err instanceof APIConnectionTimeoutError) return timeoutError(ctx, err);
  if (err instanceof APIConnectionError) return networkError(ctx, err);
  if (err instanceof APIError) {
    const e = errorObject(err.error);
    const type = (typeof err.type === "string" ? err.type : undefined) ?? (typeof e?.["type"] === "string" ? e["type"] : undefined) ?? amznErrorType(err.headers);
    const message = err.apiMessage ?? (typeof e?.["message"] === "string" ? e["message"] : undefined);
    return vendorError(
      { status: err.status, code: err.errorCode ?? type, type, message, retryAfterMs: parseRetryAfter(err.headers, now) },
      ctx.provider,
      ctx.secrets,
      err,
      ctx.partialUsage,
    );
  }
  if (isMalformedStreamError(err)) return malformedError(ctx, err);
  return networkError(ctx, err);
}

/** `stop_reason: "refusal"`: the model's safety classifier stopped the answer. */
export function refusalError(ctx: FailureContext): ProviderError {
  return new ProviderError("content_policy", safeMessage("content_policy", ctx.provider), { partialUsage: ctx.partialUsage });
}
