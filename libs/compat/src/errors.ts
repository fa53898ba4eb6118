import type { RunError } from "@byok/protocol";

/**
 * A failure the compatible endpoints answer with, in vendor-neutral terms. Each vendor module
 * renders it in its own error shape (`errorBody`), with `status` as the HTTP status. The message
 * is safe for callers: never a credential, never prompt text.
 */
export type CompatErrorKind =
  | "invalid_request"
  | "authentication"
  | "permission"
  | "not_found"
  | "too_large"
  | "rate_limited"
  | "budget_exhausted"
  | "upstream"
  | "unavailable"
  | "internal";

const STATUS: Record<CompatErrorKind, number> = {
  invalid_request: 400,
  authentication: 401,
  permission: 403,
  not_found: 404,
  too_large: 413,
  rate_limited: 429,
  budget_exhausted: 429,
  upstream: 502,
  unavailable: 503,
  internal: 500,
};

export class CompatError extends Error {
  readonly kind: CompatErrorKind;
  readonly status: number;
  /** The request field at fault, when there is one (OpenAI's `param`). */
  readonly param: string | undefined;
  /** A machine-readable code where the vendor has one (OpenAI's `code`, e.g. `model_not_found`). */
  readonly code: string | undefined;

  constructor(kind: CompatErrorKind, message: string, opts: { param?: string; code?: string } = {}) {
    super(message);
    this.name = "CompatError";
    this.kind = kind;
    this.status = STATUS[kind];
    this.param = opts.param;
    this.code = opts.code;
  }
}

/** The run error catalogue (libs/protocol errors.ts) in HTTP terms. */
export function compatErrorFromRun(e: RunError, modelId: string): CompatError {
  switch (e.kind) {
    case "bad_model":
      return new CompatError("not_found", `The model \`${modelId}\` does not exist or you do not have access to it. (${e.message})`, { param: "model", code: "model_not_found" });
    case "rate_limited":
    case "provider_rate_limited":
      return new CompatError("rate_limited", e.message, { code: "rate_limit_exceeded" });
    case "budget_exhausted":
      return new CompatError("budget_exhausted", e.message, { code: "insufficient_quota" });
    case "provider_refused":
      return new CompatError("invalid_request", e.message);
    case "conversation_too_long":
      return new CompatError("invalid_request", e.message, { param: "messages", code: "context_length_exceeded" });
    case "base_url_refused":
    case "unpriced_model":
      return new CompatError("permission", e.message);
    case "bad_client_key":
    case "bad_gateway_key":
    case "provider_quota":
      return new CompatError("upstream", e.message);
    case "provider_unavailable":
    case "gateway_unavailable":
      return new CompatError("unavailable", e.message);
    case "canceled":
    case "output_cap":
    case "internal":
      return new CompatError("internal", e.message);
  }
}

/** Anything thrown that is not a CompatError becomes an `internal` one without leaking its text. */
export function asCompatError(err: unknown): CompatError {
  return err instanceof CompatError ? err : new CompatError("internal", "The gateway failed to serve this request; please retry.");
}
