import type { Usage } from "./events.js";

export type ProviderErrorKind =
  | "rate_limited"
  | "overloaded"
  | "server"
  | "network"
  | "timeout"
  | "malformed_stream"
  | "auth"
  | "quota"
  | "invalid_request"
  | "content_policy"
  | "context_overflow"
  | "not_found"
  | "address_refused"
  | "cancelled";

/**
 * A failed pass. `message` is safe for users (never contains a credential);
 * `cause` keeps the original error for logs (which redact secrets).
 */
export class ProviderError extends Error {
  readonly kind: ProviderErrorKind;
  readonly retryable: boolean;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  /** Usage the provider reported before failing, if any (usage is never lost). */
  readonly partialUsage: Usage | undefined;

  constructor(
    kind: ProviderErrorKind,
    message: string,
    opts: { status?: number; retryAfterMs?: number; cause?: unknown; partialUsage?: Usage } = {},
  ) {
    super(message, { cause: opts.cause });
    this.name = "ProviderError";
    this.kind = kind;
    this.retryable = RETRYABLE.has(kind);
    this.status = opts.status;
    this.retryAfterMs = opts.retryAfterMs;
    this.partialUsage = opts.partialUsage;
  }
}

const RETRYABLE = new Set<ProviderErrorKind>([
  "rate_limited",
  "overloaded",
  "server",
  "network",
  "timeout",
  "malformed_stream",
]);
