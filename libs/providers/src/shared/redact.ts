/**
 * Secret scrubbing for text that came from outside (vendor error messages). Adapters build
 * their own messages; vendor text is only appended after passing through here.
 */

/** Shapes of credentials that must never be shown even when we do not know the exact value. */
const CREDENTIAL_PATTERNS: readonly RegExp[] = [
  /\bsk-[A-Za-z0-9_*.-]{6,}/g, // OpenAI / Anthropic / many compatible servers
  /\b(?:AKIA|ASIA)[A-Z0-9]{12,}\b/g, // AWS access key ids
  /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/gi,
];

/** `name: value` / `name=value` pairs whose value is a credential; the name is kept. */
const KEYED_CREDENTIAL = /\b(api[-_]?key|authorization|token|secret|signature|password)(["']?\s*[:=]\s*["']?)[^\s"',;&]{4,}/gi;

const MAX_DETAIL = 300;

/** Removes `secrets` (exact values, ≥ 4 chars) and anything shaped like a credential; trims to a readable length. */
export function redact(text: string, secrets: readonly (string | undefined)[] = []): string {
  const out = scrub(text, secrets).replace(/\s+/g, " ").trim();
  return out.length > MAX_DETAIL ? `${out.slice(0, MAX_DETAIL)}…` : out;
}

/** Removes `secrets` and credential-shaped substrings, keeping the text's layout (for logs and stacks). */
export function scrub(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const s of secrets) {
    if (s && s.length >= 4) out = out.split(s).join("[redacted]");
  }
  for (const p of CREDENTIAL_PATTERNS) out = out.replace(p, "[redacted]");
  out = out.replace(KEYED_CREDENTIAL, (_m: string, name: string, sep: string) => `${name}${sep}[redacted]`);
  return out;
}

/**
 * A stand-in for a vendor/SDK error that is safe to keep as `cause`: same name, scrubbed
 * message and stack, plus the status/code/type fields logs need. The original is dropped
 * because SDK errors can carry echoed keys, request URLs and header objects.
 */
export function safeCause(err: unknown, secrets: readonly (string | undefined)[]): Error {
  if (!(err instanceof Error)) return new Error(scrub(String(err), secrets));
  const out = new Error(scrub(err.message, secrets));
  out.name = err.name;
  out.stack = err.stack === undefined ? undefined : scrub(err.stack, secrets);
  const fields = err as unknown as Record<string, unknown>;
  for (const k of ["status", "code", "type", "errno", "syscall"] as const) {
    const v = fields[k];
    if (typeof v === "string" || typeof v === "number") (out as unknown as Record<string, unknown>)[k] = typeof v === "string" ? scrub(v, secrets) : v;
  }
  if (err.cause !== undefined) out.cause = safeCause(err.cause, secrets);
  return out;
}

/** `base` plus a scrubbed vendor detail when there is one. */
export function withDetail(base: string, vendorDetail: string | undefined, secrets: readonly (string | undefined)[]): string {
  if (!vendorDetail) return base;
  const d = redact(vendorDetail, secrets);
  return d ? `${base}: ${d}` : base;
}
