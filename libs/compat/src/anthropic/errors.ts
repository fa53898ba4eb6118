import type { CompatError } from "../errors.js";

/** Anthropic's error body: `{"type":"error","error":{"type","message"}}`. */
export function anthropicErrorBody(e: CompatError): { type: "error"; error: { type: string; message: string } } {
  return { type: "error", error: { type: anthropicType(e), message: e.message } };
}

function anthropicType(e: CompatError): string {
  switch (e.kind) {
    case "invalid_request":
      return "invalid_request_error";
    case "authentication":
      return "authentication_error";
    case "permission":
      return "permission_error";
    case "not_found":
      return "not_found_error";
    case "too_large":
      return "request_too_large";
    case "rate_limited":
    case "budget_exhausted":
      return "rate_limit_error";
    case "unavailable":
      return "overloaded_error";
    case "upstream":
    case "internal":
      return "api_error";
  }
}
