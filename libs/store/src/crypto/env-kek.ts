/** Distributed mode: the KEK comes from the environment (base64 of 32 bytes). */
import { createAesGcmKek } from "./aes-gcm.js";
import { KekError, type KeyEncryptionKey } from "./kek.js";

export const KEK_ENV = "GATEWAY_KEK";
export const KEK_VERSION_ENV = "GATEWAY_KEK_VERSION";

/**
 * Reads `GATEWAY_KEK` (base64, exactly 32 bytes once decoded) and `GATEWAY_KEK_VERSION`
 * (default 1). Throws KekError "bad_key" when missing or malformed; the message never
 * echoes the value.
 */
export function kekFromEnv(env: Record<string, string | undefined> = process.env): KeyEncryptionKey {
  const raw = env[KEK_ENV];
  if (raw === undefined || raw.trim() === "") throw new KekError("bad_key", `${KEK_ENV} is not set (base64 of 32 random bytes)`);
  const trimmed = raw.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) throw new KekError("bad_key", `${KEK_ENV} is not valid base64`);
  const key = Buffer.from(trimmed, "base64");
  if (key.length !== 32) throw new KekError("bad_key", `${KEK_ENV} must decode to 32 bytes, got ${key.length}`);
  const versionRaw = env[KEK_VERSION_ENV];
  const version = versionRaw === undefined || versionRaw === "" ? 1 : Number(versionRaw);
  try {
    return createAesGcmKek(key, version);
  } finally {
    key.fill(0);
  }
}
