import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import type { ProviderError } from "@byok/protocol";
import { mapSdkError, type FailureContext } from "./transport.js";
import { isRecord } from "./usage.js";

const OPENAI_ERRORS = { userAbort: APIUserAbortError, timeout: APIConnectionTimeoutError, connection: APIConnectionError, api: APIError };

/**
 * Maps anything the `openai` SDK (OpenAI, Azure, compatible endpoints) throws to a
 * ProviderError (the order is mapSdkError's); API errors are classified from status + body.
 */
export function mapOpenAIError(err: unknown, ctx: FailureContext, now: () => number = Date.now): ProviderError {
  return mapSdkError(err, ctx, OPENAI_ERRORS, (e) => {
    const body = isRecord(e.error) ? e.error : undefined;
    return {
      code: typeof e.code === "string" ? e.code : undefined,
      type: typeof e.type === "string" ? e.type : undefined,
      // Compatible servers (vLLM, llama.cpp…) put message/code at the top level rather than
      // under `error`; the SDK then only has its own composed message. Both are scrubbed later.
      message: typeof body?.["message"] === "string" ? body["message"] : e.message,
    };
  }, now);
}
