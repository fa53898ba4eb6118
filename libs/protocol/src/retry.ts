import type { ProviderError } from "./model/index.js";

/**
 * The engine's retry policy for provider passes: failures before the
 * stream started are retried up to `connectRetries` times, failures after it started up to
 * `streamRetries` times; exponential backoff with jitter between attempts; a provider's
 * `retry-after` wins over the backoff. Fatal kinds (context overflow, quota, auth, invalid
 * request, content policy, not found, cancelled) are never retried. Pure: no timers, no
 * randomness of its own: the jitter's `random` is the caller's (the engine passes Math.random).
 */
export interface RetryPolicy {
  /** Retries of a pass that failed before yielding any event (connect, HTTP status errors). Default 4. */
  connectRetries: number;
  /** Retries of a pass that failed after it started streaming. Default 5. */
  streamRetries: number;
  /** Delay before the first retry, before jitter. Default 200 ms. */
  baseDelayMs: number;
  /** Upper bound of the backoff (not of a provider's retry-after). Default 10 s. */
  maxDelayMs: number;
  /** Relative jitter: the delay is multiplied by a uniform factor in [1 − jitter, 1 + jitter]. Default 0.1. */
  jitter: number;
  /**
   * A provider asking to wait longer than this is not waited for: the failure is surfaced
   * (the user sees the rate limit at once instead of a silent minute). Default 60 s.
   */
  maxRetryAfterMs: number;
}

/** Defaults: 4 connection retries, 5 stream retries, 200 ms × 2ⁿ backoff with ±10 % jitter. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  connectRetries: 4,
  streamRetries: 5,
  baseDelayMs: 200,
  maxDelayMs: 10_000,
  jitter: 0.1,
  maxRetryAfterMs: 60_000,
});

/** Where the pass failed: `connect` = before the adapter yielded any event; `stream` = after. */
export type RetryPhase = "connect" | "stream";

export type RetryDecision =
  | { retry: false; reason: "not_retryable" | "exhausted" | "retry_after_too_long" }
  | {
      retry: true;
      delayMs: number;
      /** 1-based number of this retry in its phase, for "reconnecting 2/5". */
      retryNumber: number;
      /** Retries this phase allows. */
      maxRetries: number;
    };

/** Exponential backoff for the `retryNumber`-th retry (1-based): base × 2^(n−1), capped, jittered. */
export function backoffDelay(policy: RetryPolicy, retryNumber: number, random: () => number): number {
  const exp = policy.baseDelayMs * 2 ** Math.max(0, retryNumber - 1);
  const capped = Math.min(policy.maxDelayMs, exp);
  const factor = 1 - policy.jitter + 2 * policy.jitter * clamp01(random());
  return Math.max(0, Math.round(capped * factor));
}

/**
 * Decides whether to retry after `err`, given `attemptsSoFar` retries already made in `phase`
 * (0 for the first failure). A provider's retry-after is used as the delay when present
 * (never shortened by jitter); otherwise the jittered backoff.
 */
export function decideRetry(
  policy: RetryPolicy,
  err: Pick<ProviderError, "kind" | "retryable" | "retryAfterMs">,
  phase: RetryPhase,
  attemptsSoFar: number,
  random: () => number,
): RetryDecision {
  if (!err.retryable || err.kind === "cancelled") return { retry: false, reason: "not_retryable" };
  const maxRetries = phase === "connect" ? policy.connectRetries : policy.streamRetries;
  if (attemptsSoFar >= maxRetries) return { retry: false, reason: "exhausted" };
  const retryNumber = attemptsSoFar + 1;
  if (err.retryAfterMs !== undefined) {
    if (err.retryAfterMs > policy.maxRetryAfterMs) return { retry: false, reason: "retry_after_too_long" };
    return { retry: true, delayMs: Math.max(0, Math.ceil(err.retryAfterMs)), retryNumber, maxRetries };
  }
  return { retry: true, delayMs: backoffDelay(policy, retryNumber, random), retryNumber, maxRetries };
}

/** Builds a policy from partial settings (configuration), falling back to the defaults field by field. */
export function retryPolicy(overrides: Partial<RetryPolicy> = {}): RetryPolicy {
  const p = { ...DEFAULT_RETRY_POLICY, ...overrides };
  if (!(p.jitter >= 0 && p.jitter <= 1)) throw new RangeError("retry jitter must be within [0, 1]");
  for (const k of ["connectRetries", "streamRetries", "baseDelayMs", "maxDelayMs", "maxRetryAfterMs"] as const) {
    if (!(Number.isFinite(p[k]) && p[k] >= 0)) throw new RangeError(`retry ${k} must be a non-negative number`);
  }
  return p;
}

function clamp01(x: number): number {
  return x < 0 ? 0 : x > 1 ? 1 : x;
}

/** What follows a run's failed provider attempt (see {@link decideAfterFailure}). */
export type AttemptFailureAction =
  | { action: "retry"; delayMs: number; retryNumber: number; maxRetries: number }
  | { action: "failover" }
  | { action: "compact" }
  | { action: "fail" };

/** A run's failed provider attempt, as the failure policy sees it. */
export interface AttemptFailure {
  error: Pick<ProviderError, "kind" | "retryable" | "retryAfterMs">;
  phase: RetryPhase;
  /** Retries already made in `phase` of this model call. */
  retriesSoFar: number;
  /** Output of the attempt reached the client. */
  outputStarted: boolean;
  /** Route targets after the current one. */
  targetsLeft: number;
  /** Compaction after a refusal may still be tried (not yet this turn, not a summary run). */
  mayCompact: boolean;
}

/**
 * The run's failure policy, in order: a retry the policy allows; else the route's next target,
 * but only while no output reached the client (a re-run could not take back what the user
 * saw); else, for a refusal as longer than the context window, one compaction this turn (the
 * engine still needs something to compact); else the run fails.
 */
export function decideAfterFailure(policy: RetryPolicy, f: AttemptFailure, random: () => number): AttemptFailureAction {
  const retry = decideRetry(policy, f.error, f.phase, f.retriesSoFar, random);
  if (retry.retry) return { action: "retry", delayMs: retry.delayMs, retryNumber: retry.retryNumber, maxRetries: retry.maxRetries };
  if (f.outputStarted) return { action: "fail" };
  if (f.error.kind !== "cancelled" && f.targetsLeft > 0) return { action: "failover" };
  if (f.error.kind === "context_overflow" && f.mayCompact) return { action: "compact" };
  return { action: "fail" };
}
