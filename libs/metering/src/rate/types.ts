/**
 * Rate limits per tenant and per gateway API key, in fixed one-minute UTC windows:
 * run starts per minute (new generations, not every BidiAppend) and tokens per minute.
 *
 * Guarantees of every RateLimiter:
 * - `tryStartRun` is atomic across callers (and across replicas for the Redis limiter): a
 *   start is admitted only if, in the current window, every configured scope has fewer
 *   starts than its limit and fewer tokens than its token limit; an admitted start counts
 *   immediately in every scope, a refused one in none.
 * - `recordTokens` adds used tokens (client-credential runs included) to the current window
 *   of every scope; a window over its token limit refuses further starts until it ends.
 * - An absent limit never refuses. Windows reset at each UTC minute (a burst of up to twice
 *   a limit across a window boundary is possible: the price of O(1) state).
 */
import type { RateLimits } from "@byok/store";


export interface RateSubject {
  tenantId: string;
  /** Gateway API key of the request; undefined in open and trusted-header modes. */
  keyId: string | undefined;
  limits: { tenant?: RateLimits | undefined; key?: RateLimits | undefined };
  now?: Date;
}

export interface RateRefusal {
  reason: "rate";
  scope: "tenant" | "key";
  kind: "run_starts" | "tokens";
  limit: number;
  /** When the current window ends. */
  retryAfterMs: number;
  /** Safe for users; names the limit. */
  message: string;
}

export type RateResult = { ok: true } | { ok: false; refused: RateRefusal };

export interface RateLimiter {
  tryStartRun(s: RateSubject): Promise<RateResult>;
  recordTokens(s: Omit<RateSubject, "limits">, tokens: number): Promise<void>;
  close(): Promise<void>;
}
