import { describe, expect, it } from "vitest";
import { backoffDelay, decideAfterFailure, decideRetry, DEFAULT_RETRY_POLICY, ProviderError, retryPolicy, type AttemptFailure, type ProviderErrorKind } from "../src/index.js";

const err = (kind: ProviderErrorKind, retryAfterMs?: number) => new ProviderError(kind, "x", retryAfterMs === undefined ? {} : { retryAfterMs });
const mid = () => 0.5; // jitter factor exactly 1

describe("retry policy", () => {
  it("has the README's defaults: 4 connection-phase and 5 stream-phase retries", () => {
    expect(DEFAULT_RETRY_POLICY).toMatchObject({ connectRetries: 4, streamRetries: 5 });
  });

  it("backs off exponentially from the base, capped at the maximum", () => {
    const p = retryPolicy({ baseDelayMs: 100, maxDelayMs: 1000 });
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(p, n, mid))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it("jitters within ±jitter", () => {
    const p = retryPolicy({ baseDelayMs: 1000, jitter: 0.2 });
    expect(backoffDelay(p, 1, () => 0)).toBe(800);
    expect(backoffDelay(p, 1, () => 1)).toBe(1200);
    expect(backoffDelay(retryPolicy({ baseDelayMs: 1000, jitter: 0 }), 1, () => 0.93)).toBe(1000);
  });

  it("retries retryable kinds per phase until exhausted, counting 1-based", () => {
    const p = DEFAULT_RETRY_POLICY;
    for (let i = 0; i < 4; i++) {
      expect(decideRetry(p, err("server"), "connect", i, mid)).toMatchObject({ retry: true, retryNumber: i + 1, maxRetries: 4 });
    }
    expect(decideRetry(p, err("server"), "connect", 4, mid)).toEqual({ retry: false, reason: "exhausted" });
    expect(decideRetry(p, err("network"), "stream", 4, mid)).toMatchObject({ retry: true, retryNumber: 5, maxRetries: 5 });
    expect(decideRetry(p, err("network"), "stream", 5, mid)).toEqual({ retry: false, reason: "exhausted" });
  });

  it("never retries fatal kinds", () => {
    for (const k of ["context_overflow", "quota", "auth", "invalid_request", "content_policy", "not_found", "cancelled"] as const) {
      expect(decideRetry(DEFAULT_RETRY_POLICY, err(k), "connect", 0, mid)).toEqual({ retry: false, reason: "not_retryable" });
    }
    for (const k of ["rate_limited", "overloaded", "server", "network", "timeout", "malformed_stream"] as const) {
      expect(decideRetry(DEFAULT_RETRY_POLICY, err(k), "stream", 0, mid).retry).toBe(true);
    }
  });

  it("honours retry-after exactly, and gives up when it is too long", () => {
    expect(decideRetry(DEFAULT_RETRY_POLICY, err("rate_limited", 3000), "connect", 0, () => 0)).toMatchObject({ retry: true, delayMs: 3000 });
    expect(decideRetry(DEFAULT_RETRY_POLICY, err("rate_limited", 0), "connect", 0, () => 0)).toMatchObject({ retry: true, delayMs: 0 });
    expect(decideRetry(DEFAULT_RETRY_POLICY, err("rate_limited", 120_000), "connect", 0, mid)).toEqual({ retry: false, reason: "retry_after_too_long" });
  });

  it("rejects nonsense settings", () => {
    expect(() => retryPolicy({ jitter: 2 })).toThrow(RangeError);
    expect(() => retryPolicy({ connectRetries: -1 })).toThrow(RangeError);
  });
});

describe("failure policy of a run's attempt", () => {
  const failure = (kind: ProviderErrorKind, over: Partial<AttemptFailure> = {}): AttemptFailure => ({
    error: err(kind), phase: "connect", retriesSoFar: 0, outputStarted: false, targetsLeft: 0, mayCompact: true, ...over,
  });
  const decide = (f: AttemptFailure) => decideAfterFailure(DEFAULT_RETRY_POLICY, f, mid);

  it("retries first, with the numbers the notice shows", () => {
    expect(decide(failure("server", { targetsLeft: 1 }))).toEqual({ action: "retry", delayMs: 200, retryNumber: 1, maxRetries: 4 });
    expect(decide(failure("network", { phase: "stream", retriesSoFar: 2, outputStarted: true }))).toMatchObject({ action: "retry", retryNumber: 3, maxRetries: 5 });
  });

  it("fails over to the next target once retries are spent, only before any output", () => {
    expect(decide(failure("server", { retriesSoFar: 4, targetsLeft: 1 }))).toEqual({ action: "failover" });
    expect(decide(failure("auth", { targetsLeft: 2 }))).toEqual({ action: "failover" });
    expect(decide(failure("server", { phase: "stream", retriesSoFar: 5, targetsLeft: 1, outputStarted: true }))).toEqual({ action: "fail" });
    expect(decide(failure("server", { retriesSoFar: 4, targetsLeft: 0 }))).toEqual({ action: "fail" });
    expect(decide(failure("cancelled", { targetsLeft: 1 }))).toEqual({ action: "fail" });
  });

  it("compacts after a refusal as too long when no target is left and compaction may still be tried", () => {
    expect(decide(failure("context_overflow"))).toEqual({ action: "compact" });
    expect(decide(failure("context_overflow", { targetsLeft: 1 }))).toEqual({ action: "failover" });
    expect(decide(failure("context_overflow", { mayCompact: false }))).toEqual({ action: "fail" });
    expect(decide(failure("context_overflow", { outputStarted: true }))).toEqual({ action: "fail" });
  });
});
