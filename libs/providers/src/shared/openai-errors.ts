import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import { ProviderError } from "@byok/protocol";
import { vendorError } from "./classify.js";
import { parseRetryAfter } from "./retry-after.js";
import { cancelledError, isMalformedStreamError, malformedError, networkError, timeoutError, type FailureContext } from "./transport.js";
import { isRecord } from "./usage.js";

/**
 * Maps anything the `openai` SDK (OpenAI, Azure, compatible endpoints) throws to a
 * ProviderError. Order matters: a caller abort wins over whatever the SDK made of it;
 * API errors are classified from status + body; transport errors by type.
 */
export function mapOpenAIError(err: unknown, ctx: FailureContext, now: () => number = Date.now): ProviderError {
  if (err instanceof ProviderError) return err;
  if (ctx.signal.aborted || err instanceof APIUserAbortError) return cancelledError(ctx, err);
  if (err instanceof APIConnectionTimeoutError) return timeoutError(ctx, err);
  if (err instanceof APIConnectionError) return networkError(ctx, err);
  if (err instanceof APIError) {
    const body = isRecord(err.error) ? err.error : undefined;
    // Compatible servers (vLLM, llama.cpp…) put message/code at the top level rather than
    // under `error`; the SDK then only has its own composed message. Both are scrubbed later.
    const message = typeof body?.["message"] === "string" ? body["message"] : err.message;
    return vendorError(
      {
        status: err.status,
        code: typeof err.code === "string" ? err.code : undefined,
        type: typeof err.type === "string" ? err.type : undefined,
        message,
        retryAfterMs: parseRetryAfter(err.headers, now),
      },
      ctx.provider,
      ctx.secrets,
      err,
      ctx.partialUsage,
    );
  }
  if (isMalformedStreamError(err)) return malformedError(ctx, err);
  return networkError(ctx, err);
}
