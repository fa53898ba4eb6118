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
