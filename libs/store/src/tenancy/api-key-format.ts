/**
 * Gateway API key format: `byok_<prefix>_<secret>` with a 12-hex-digit public prefix (what
 * admins see and what lookups use) and a 64-hex-digit secret (256 random bits). Only the
 * SHA-256 of the secret is stored: with 256 bits of entropy, a fast hash is as strong as a
 * slow one, and verification stays cheap on every request.
 */
import { hash, randomBytes, timingSafeEqual } from "node:crypto";

const FORMAT = /^byok_([0-9a-f]{12})_([0-9a-f]{64})$/;

export interface ParsedApiKey {
  prefix: string;
  secret: string;
}

/** A fresh key; `full` is what the client sends. */
export function generateApiKey(): ParsedApiKey & { full: string } {
  const prefix = randomBytes(6).toString("hex");
  const secret = randomBytes(32).toString("hex");
  return { prefix, secret, full: `byok_${prefix}_${secret}` };
}

/** undefined for anything not shaped like a gateway key (no partial parses). */
export function parseApiKey(presented: string): ParsedApiKey | undefined {
  const m = FORMAT.exec(presented.trim());
  return m?.[1] === undefined || m[2] === undefined ? undefined : { prefix: m[1], secret: m[2] };
}

/** SHA-256 of a secret (one-shot `crypto.hash`: every request of a turn hashes its key, so no hash object per call). */
export function hashSecret(secret: string): Uint8Array {
  return new Uint8Array(hash("sha256", secret, "buffer"));
}

/** The same digest as base64 text: a key for in-memory maps that is never the secret itself. */
export function secretDigest(secret: string): string {
  return hash("sha256", secret, "base64");
}

/** Constant-time equality of two hashes (false, still in constant time, if lengths differ). */
export function hashesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) {
    timingSafeEqual(a, a);
    return false;
  }
  return timingSafeEqual(a, b);
}
