/**
 * Polls `fn` until it returns a truthy value and resolves with it; rejects after `timeoutMs`
 * naming `what`. The one bounded wait of the test suites (no sleeps standing in for a condition).
 */
export async function waitFor<T>(
  fn: () => Promise<T | undefined | false | null> | T | undefined | false | null,
  timeoutMs = 20_000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Resolves once the current UTC minute has at least `spanMs` left. The rate limiter counts run
 * starts in fixed minute windows (docs/tenancy.md), so a test whose starts must share one window
 * waits here first instead of retrying when they straddle a boundary.
 */
export async function withinOneMinuteWindow(spanMs = 15_000): Promise<void> {
  if (spanMs >= 60_000) throw new Error(`withinOneMinuteWindow: ${spanMs} ms does not fit in a minute`);
  const left = 60_000 - (Date.now() % 60_000);
  if (left < spanMs) await new Promise((r) => setTimeout(r, left + 50));
}
