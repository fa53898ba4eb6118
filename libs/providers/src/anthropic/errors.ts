import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "@anthropic-ai/sdk";
import { ProviderError } from "@byok/protocol";
import { safeMessage } from "../shared/classify.js";
import { mapSdkError, type FailureContext } from "../shared/transport.js";
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

const ANTHROPIC_ERRORS = { userAbort: APIUserAbortError, timeout: APIConnectionTimeoutError, connection: APIConnectionError, api: APIError };

/**
 * Maps anything `@anthropic-ai/sdk` / `@anthropic-ai/bedrock-sdk` throws to a ProviderError
 * (the order is mapSdkError's); API errors are classified from status + `error.type` (+ Bedrock
 * exception types, which arrive as stream `error` events or the `x-amzn-errortype` header).
 */
export function mapAnthropicError(err: unknown, ctx: FailureContext, now: () => number = Date.now): ProviderError {
  return mapSdkError(err, ctx, ANTHROPIC_ERRORS, (e) => {
    const body = errorObject(e.error);
    const type = (typeof e.type === "string" ? e.type : undefined) ?? (typeof body?.["type"] === "string" ? body["type"] : undefined) ?? amznErrorType(e.headers);
    return { code: e.errorCode ?? type, type, message: e.apiMessage ?? (typeof body?.["message"] === "string" ? body["message"] : undefined) };
  }, now);
}

/** `stop_reason: "refusal"`: the model's safety classifier stopped the answer. */
export function refusalError(ctx: FailureContext): ProviderError {
  return new ProviderError("content_policy", safeMessage("content_policy", ctx.provider), { partialUsage: ctx.partialUsage });
}
