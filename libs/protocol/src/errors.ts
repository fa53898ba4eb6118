import { create, toBinary } from "@bufbuild/protobuf";
import { CustomErrorDetailsSchema, ErrorDetails_Error, ErrorDetailsSchema, type ConnectCodeName } from "@byok/wire";
import type { CredentialsSource, ProviderError } from "./model/index.js";

/**
 * The gateway's closed catalogue of ways a stream can end badly (docs/protocol.md "Ending a stream").
 * Each maps to one Connect code and one aiserver.v1.ErrorDetails.Error.
 */
export type RunErrorKind =
  | "canceled"
  | "provider_unavailable"
  | "provider_rate_limited"
  | "bad_client_key"
  | "bad_gateway_key"
  | "provider_quota"
  | "provider_refused"
  | "bad_model"
  | "conversation_too_long"
  | "base_url_refused"
  | "output_cap"
  | "budget_exhausted"
  | "unpriced_model"
  | "rate_limited"
  /** A dependency of the gateway (its database, Redis, metering) cannot be reached: retryable. */
  | "gateway_unavailable"
  | "internal";

/**
 * Refusals at the edge, before any run: bad input, limits, a replica that cannot serve now, an
 * unknown request, gateway authentication, procedures the gateway does not serve.
 */
export type EdgeErrorKind =
  | "bad_request"
  | "limit_exceeded"
  | "overloaded"
  | "request_not_found"
  | "gateway_auth"
  | "gateway_token_expired"
  | "not_served";

export interface RunError {
  kind: RunErrorKind;
  /** Safe for users: never a credential, never prompt text. */
  message: string;
}

/** An entry of the catalogue: a run's end or an edge refusal. */
export interface GatewayError {
  kind: RunErrorKind | EdgeErrorKind;
  /** Safe for users: never a credential, never prompt text. */
  message: string;
}

export interface EndDecision {
  ok: boolean;
  code?: ConnectCodeName;
  message?: string;
  detail?: { error: ErrorDetails_Error; title: string; detail: string; isRetryable: boolean };
}

const TABLE: Record<RunErrorKind | EdgeErrorKind, { code: ConnectCodeName; error: ErrorDetails_Error; title: string; retryable: boolean }> = {
  canceled: { code: "canceled", error: ErrorDetails_Error.USER_ABORTED_REQUEST, title: "Canceled", retryable: false },
  provider_unavailable: { code: "unavailable", error: ErrorDetails_Error.PROVIDER_ERROR, title: "Model provider unavailable", retryable: true },
  provider_rate_limited: { code: "unavailable", error: ErrorDetails_Error.RATE_LIMITED, title: "Model provider rate limit", retryable: true },
  bad_client_key: { code: "failed_precondition", error: ErrorDetails_Error.BAD_USER_API_KEY, title: "Your API key was rejected", retryable: false },
  bad_gateway_key: { code: "failed_precondition", error: ErrorDetails_Error.PROVIDER_ERROR, title: "Gateway provider key rejected", retryable: false },
  provider_quota: { code: "failed_precondition", error: ErrorDetails_Error.PROVIDER_ERROR, title: "Model provider quota exhausted", retryable: false },
  provider_refused: { code: "invalid_argument", error: ErrorDetails_Error.PROVIDER_ERROR, title: "Model provider refused the request", retryable: false },
  bad_model: { code: "invalid_argument", error: ErrorDetails_Error.BAD_MODEL_NAME, title: "Unknown model", retryable: false },
  conversation_too_long: { code: "invalid_argument", error: ErrorDetails_Error.CONVERSATION_TOO_LONG, title: "Conversation too long", retryable: false },
  base_url_refused: { code: "permission_denied", error: ErrorDetails_Error.CUSTOM_MESSAGE, title: "Base URL refused", retryable: false },
  output_cap: { code: "resource_exhausted", error: ErrorDetails_Error.RESOURCE_EXHAUSTED, title: "Output limit reached", retryable: false },
  budget_exhausted: { code: "resource_exhausted", error: ErrorDetails_Error.RESOURCE_EXHAUSTED, title: "Usage budget exhausted", retryable: false },
  rate_limited: { code: "resource_exhausted", error: ErrorDetails_Error.RATE_LIMITED, title: "Rate limit reached", retryable: true },
  unpriced_model: { code: "failed_precondition", error: ErrorDetails_Error.CUSTOM_MESSAGE, title: "Model has no price", retryable: false },
  internal: { code: "internal", error: ErrorDetails_Error.INTERNAL, title: "Gateway error", retryable: true },
  bad_request: { code: "invalid_argument", error: ErrorDetails_Error.BAD_REQUEST, title: "Invalid request", retryable: false },
  limit_exceeded: { code: "resource_exhausted", error: ErrorDetails_Error.RESOURCE_EXHAUSTED, title: "Limit exceeded", retryable: false },
  overloaded: { code: "resource_exhausted", error: ErrorDetails_Error.RESOURCE_EXHAUSTED, title: "Gateway busy", retryable: true },
  gateway_unavailable: { code: "unavailable", error: ErrorDetails_Error.INTERNAL, title: "Gateway temporarily unavailable", retryable: true },
  request_not_found: { code: "not_found", error: ErrorDetails_Error.NOT_FOUND, title: "Request not found", retryable: false },
  gateway_auth: { code: "unauthenticated", error: ErrorDetails_Error.BAD_API_KEY, title: "Gateway authentication failed", retryable: false },
  gateway_token_expired: { code: "unauthenticated", error: ErrorDetails_Error.AUTH_TOKEN_EXPIRED, title: "Gateway authentication failed", retryable: false },
  not_served: { code: "unimplemented", error: ErrorDetails_Error.CUSTOM_MESSAGE, title: "Not served by the gateway", retryable: false },
};

export function endFor(err: GatewayError): EndDecision {
  const t = TABLE[err.kind];
  return {
    ok: false,
    code: t.code,
    message: err.message,
    detail: { error: t.error, title: t.title, detail: err.message, isRetryable: t.retryable },
  };
}

/** Maps a provider failure (after retries) to the run error the client sees. */
export function runErrorFromProvider(e: ProviderError, credentialsSource: CredentialsSource, compactionTried = false): RunError {
  switch (e.kind) {
    case "rate_limited":
      return { kind: "provider_rate_limited", message: `The model provider is rate limiting requests: ${e.message}` };
    case "auth":
      return credentialsSource === "client"
        ? { kind: "bad_client_key", message: `The model provider rejected your API key: ${e.message}` }
        : { kind: "bad_gateway_key", message: `The model provider rejected the gateway's key for this model; an administrator must fix the route's credentials. (${e.message})` };
    case "quota":
      return { kind: "provider_quota", message: `The model provider refused for quota or billing reasons: ${e.message}` };
    case "invalid_request":
    case "content_policy":
    case "not_found":
      return { kind: "provider_refused", message: `The model provider refused the request: ${e.message}` };
    case "context_overflow":
      return {
        kind: "conversation_too_long",
        message: `The conversation is longer than the model's context window (${compactionTried ? "still, after compacting it" : "compaction was not tried"}). ${e.message}`,
      };
    case "cancelled":
      return { kind: "canceled", message: "The run was canceled." };
    case "address_refused":
      return { kind: "base_url_refused", message: e.message };
    case "overloaded":
    case "server":
    case "network":
    case "timeout":
    case "malformed_stream":
      return { kind: "provider_unavailable", message: `The model provider failed: ${e.message}` };
  }
}

/** Serialized aiserver.v1.ErrorDetails of an end decision (for stores that keep bytes). */
export function encodeErrorDetails(d: NonNullable<EndDecision["detail"]>): Uint8Array {
  return toBinary(
    ErrorDetailsSchema,
    create(ErrorDetailsSchema, {
      error: d.error,
      details: create(CustomErrorDetailsSchema, { title: d.title, detail: d.detail, isRetryable: d.isRetryable }),
    }),
  );
}
