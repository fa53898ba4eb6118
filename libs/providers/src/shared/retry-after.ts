/** Minimal view of response headers (WHATWG Headers, or a plain lower-cased record). */
export type HeaderSource = { get(name: string): string | null } | Record<string, string | undefined> | undefined;

function header(h: HeaderSource, name: string): string | undefined {
  if (!h) return undefined;
  if (typeof (h as { get?: unknown }).get === "function") {
    return (h as { get(n: string): string | null }).get(name) ?? undefined;
  }
  return (h as Record<string, string | undefined>)[name];
}

/** Upper bound so a hostile or broken header cannot park a retry for hours. */
export const MAX_RETRY_AFTER_MS = 10 * 60_000;

/**
 * How long the provider asked us to wait, in ms, from `retry-after-ms` (OpenAI: float ms),
 * `retry-after` (delta-seconds or an HTTP-date, RFC 9110 §10.2.3), or undefined when absent
 * or unparseable. Dates in the past give 0. Capped at MAX_RETRY_AFTER_MS.
 */
export function parseRetryAfter(h: HeaderSource, now: () => number = Date.now): number | undefined {
  const ms = header(h, "retry-after-ms");
  if (ms !== undefined && ms.trim() !== "") {
    const v = Number(ms);
    if (Number.isFinite(v) && v >= 0) return Math.min(Math.ceil(v), MAX_RETRY_AFTER_MS);
  }
  const ra = header(h, "retry-after");
  if (ra === undefined || ra.trim() === "") return undefined;
  const trimmed = ra.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) {
    return Math.min(Math.ceil(Number(trimmed) * 1000), MAX_RETRY_AFTER_MS);
  }
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - now()), MAX_RETRY_AFTER_MS);
}
