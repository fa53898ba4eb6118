import type { CompatError } from "../errors.js";

/** OpenAI's error body: `{"error":{"message","type","param","code"}}`. */
export function openAIErrorBody(e: CompatError): { error: { message: string; type: string; param: string | null; code: string | null } } {
  return { error: { message: e.message, type: openAIType(e), param: e.param ?? null, code: e.code ?? (e.kind === "authentication" ? "invalid_api_key" : null) } };
}

function openAIType(e: CompatError): string {
  switch (e.kind) {
    case "invalid_request":
    case "not_found":
    case "too_large":
    case "authentication":
    case "permission":
      return "invalid_request_error";
    case "rate_limited":
      return "requests";
    case "budget_exhausted":
      return "insufficient_quota";
    case "upstream":
    case "unavailable":
    case "internal":
      return "server_error";
  }
}
