import { REDACTED, type SecretSet } from "./secret-set.js";

/**
 * Value patterns of credentials that must never reach a log line, span or error message, whatever
 * the key they sit under. Each is anchored so ordinary words ("risk-assessment") are not hit.
 */
const VALUE_PATTERNS: readonly { re: RegExp; replace: string }[] = [
  // Authorization header values: keep the scheme so logs stay readable.
  { re: /\b(Bearer)\s+[A-Za-z0-9._~+/=-]+/gi, replace: `$1 ${REDACTED}` },
  // OpenAI (sk-, sk-proj-), Anthropic (sk-ant-...), DeepSeek and most OpenAI-compatible keys.
  { re: /(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{8,}/g, replace: REDACTED },
  // AWS access key ids (long-lived AKIA, temporary ASIA).
  { re: /(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])/g, replace: REDACTED },
  // JWTs (the gateway's own session tokens and any other): header.payload.signature.
  { re: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}/g, replace: REDACTED },
  // Google API keys.
  { re: /(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}/g, replace: REDACTED },
];

/**
 * Scrubs one string: registered secrets of `secrets` first, then the provider-key value patterns.
 * Pure; the result never contains a registered value or a string matching a pattern.
 */
export function scrubText(text: string, secrets?: SecretSet): string {
  let out = secrets ? secrets.scrub(text) : text;
  for (const { re, replace } of VALUE_PATTERNS) {
    re.lastIndex = 0;
    out = out.replace(re, replace);
  }
  return out;
}
