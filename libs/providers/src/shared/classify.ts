import { ProviderError, type ProviderErrorKind, type Usage } from "@byok/protocol";
import { safeCause, withDetail } from "./redact.js";

/** What every vendor's HTTP/stream error reduces to before classification. */
export interface VendorFailure {
  /** HTTP status; undefined for an error reported inside a 200 stream. */
  status: number | undefined;
  /** Vendor error code (`context_length_exceeded`, `insufficient_quota`…), if any. */
  code?: string | undefined;
  /** Vendor error type (`rate_limit_error`, `overloaded_error`, `server_error`…), if any. */
  type?: string | undefined;
  /** Vendor message: used for classification and, scrubbed, as detail for refusals the user can act on. */
  message?: string | undefined;
  retryAfterMs?: number | undefined;
}

const CONTEXT_CODES = new Set([
  "context_length_exceeded",
  "string_above_max_length",
  "request_too_large",
  "model_context_window_exceeded",
]);
const CONTEXT_MESSAGE =
  /maximum context length|context length|context window|context_length|prompt is too long|input is too long|too many (input )?tokens|reduce the length|exceeds the (model'?s )?(maximum|limit)/i;
const QUOTA_CODES = new Set(["insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "billing_error", "quota_exceeded"]);
const POLICY_CODES = new Set(["content_filter", "content_policy_violation", "invalid_prompt", "responsible_ai_policy_violation"]);
const RATE_CODES = new Set(["rate_limit_exceeded", "rate_limit_error", "rate_limited", "throttlingexception", "too_many_requests", "servicequotaexceededexception"]);
const OVERLOAD_CODES = new Set(["overloaded", "overloaded_error", "server_overloaded", "serviceunavailableexception", "modelnotreadyexception"]);
const AUTH_CODES = new Set(["invalid_api_key", "authentication_error", "permission_error", "unauthorized", "accessdeniedexception", "unrecognizedclientexception"]);
const NOT_FOUND_CODES = new Set(["model_not_found", "not_found_error", "deploymentnotfound", "resourcenotfoundexception"]);
const SERVER_CODES = new Set(["server_error", "api_error", "internal_error", "internalserverexception", "modelstreamerrorexception", "modelerrorexception"]);
const QUOTA_MESSAGE = /credit balance is too low|exceeded your current quota|billing/i;
const TIMEOUT_CODES = new Set(["timeout", "modeltimeoutexception"]);

function lc(s: unknown): string {
  return typeof s === "string" ? s.toLowerCase() : "";
}

/**
 * Maps a vendor failure to the closed error catalogue. Body codes beat statuses where they
 * are more precise (a 429 with `insufficient_quota` is a quota refusal, not a rate limit;
 * a 400 whose code or message says the context is too long is `context_overflow`).
 */
export function classifyFailure(f: VendorFailure): ProviderErrorKind {
  const code = lc(f.code);
  const type = lc(f.type);
  const has = (set: Set<string>) => set.has(code) || set.has(type);
  const msg = f.message ?? "";

  if (has(QUOTA_CODES) || f.status === 402) return "quota";
  if ((f.status === 400 || f.status === 403 || f.status === 429) && QUOTA_MESSAGE.test(msg)) return "quota";
  if (has(POLICY_CODES)) return "content_policy";
  if (has(CONTEXT_CODES) || f.status === 413) return "context_overflow";
  if (has(AUTH_CODES) || f.status === 401 || f.status === 403) return "auth";
  if (f.status === 529 || has(OVERLOAD_CODES)) return "overloaded";
  if (f.status === 429 || has(RATE_CODES)) return "rate_limited";
  if (has(NOT_FOUND_CODES) || f.status === 404) return "not_found";
  if (f.status === 408 || has(TIMEOUT_CODES)) return "timeout";
  if (f.status === 400 || f.status === 422) {
    return CONTEXT_MESSAGE.test(msg) ? "context_overflow" : "invalid_request";
  }
  if (f.status === 409 || (f.status !== undefined && f.status >= 500)) return "server";
  if (has(SERVER_CODES)) return "server";
  if (f.status === undefined) {
    // An error event inside an otherwise healthy stream: treat unknown ones as a server fault (retryable).
    return CONTEXT_MESSAGE.test(msg) ? "context_overflow" : "server";
  }
  return "invalid_request";
}

/** Kinds whose vendor text helps the user act (and is scrubbed before use). */
const DETAIL_KINDS = new Set<ProviderErrorKind>(["invalid_request", "context_overflow", "content_policy", "not_found", "quota"]);

/**
 * A user-safe message for `kind`. Never includes credentials, URLs or headers; vendor text
 * is appended only for refusals a user can act on, after scrubbing `secrets` and anything
 * credential-shaped.
 */
export function safeMessage(
  kind: ProviderErrorKind,
  provider: string,
  opts: { status?: number | undefined; retryAfterMs?: number | undefined; vendorMessage?: string | undefined; secrets?: readonly (string | undefined)[]; detail?: string } = {},
): string {
  const http = opts.status ? ` (HTTP ${opts.status})` : "";
  const base = ((): string => {
    switch (kind) {
      case "auth":
        return `${provider} rejected the credentials${http}; check the API key and its permissions`;
      case "quota":
        return `${provider} refused the request for quota or billing reasons${http}`;
      case "rate_limited":
        return `${provider} rate limit reached${http}${opts.retryAfterMs !== undefined ? `; retry after ${Math.ceil(opts.retryAfterMs / 1000)} s` : ""}`;
      case "overloaded":
        return `${provider} is overloaded${http}`;
      case "server":
        return `${provider} failed with a server error${http}`;
      case "invalid_request":
        return `${provider} rejected the request as invalid${http}`;
      case "context_overflow":
        return `The conversation is too long for the model's context window (${provider}${http ? `, HTTP ${opts.status}` : ""})`;
      case "content_policy":
        return `${provider} refused the request under its content policy${http}`;
      case "not_found":
        return `${provider} does not know the requested model or deployment${http}`;
      case "network":
        return `The connection to ${provider} failed${opts.detail ? ` (${opts.detail})` : ""}`;
      case "timeout":
        return `${provider} did not answer in time`;
      case "malformed_stream":
        return `${provider} sent a response stream the gateway could not decode`;
      case "cancelled":
        return `The request to ${provider} was cancelled`;
      case "address_refused":
        return `Base URL refused: ${opts.detail ?? `the address of ${provider} is internal`}`;
    }
  })();
  return DETAIL_KINDS.has(kind) ? withDetail(base, opts.vendorMessage, opts.secrets ?? []) : base;
}

/** Builds the ProviderError for a classified vendor failure. */
export function vendorError(
  f: VendorFailure,
  provider: string,
  secrets: readonly (string | undefined)[],
  cause: unknown,
  partialUsage?: Usage,
): ProviderError {
  const kind = classifyFailure(f);
  return new ProviderError(
    kind,
    safeMessage(kind, provider, { status: f.status, retryAfterMs: f.retryAfterMs, vendorMessage: f.message, secrets }),
    { status: f.status, retryAfterMs: f.retryAfterMs, cause: safeCause(cause, secrets), partialUsage },
  );
}
