/** UTC periods the counters are keyed by. */

/** "2026-11" for the UTC calendar month of `d`. */
export function utcMonth(d: Date): string {
  return d.toISOString().slice(0, 7);
}

/** Start of the UTC month after `d` (when that month's counters stop mattering). */
export function nextUtcMonthStart(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1));
}

/** Index of the UTC minute of `d` since the epoch (fixed one-minute rate windows). */
export function minuteWindow(d: Date): number {
  return Math.floor(d.getTime() / 60_000);
}

/** Milliseconds from `d` to the start of the next minute window. */
export function msToNextMinute(d: Date): number {
  return 60_000 - (d.getTime() % 60_000);
}
