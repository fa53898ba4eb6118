/**
 * Key names whose values are secrets, compared after lower-casing and removing `-`, `_` and `.`
 * (so `x-api-key`, `X_API_KEY`, `apiKey` all match). A value under such a key is replaced whole,
 * objects included (`credentials: {...}` becomes `[REDACTED]`).
 */
const EXACT = new Set([
  "authorization",
  "proxyauthorization",
  "apikey",
  "xapikey",
  "accesskey",
  "accesskeyid",
  "secretkey",
  "secretaccesskey",
  "sessiontoken",
  "xblobencryptionkey",
  "password",
  "passwd",
  "token",
  "credentials",
  "cookie",
  "setcookie",
  "privatekey",
  "encryptionkey",
]);

export function isSecretKey(key: string): boolean {
  const k = key.toLowerCase().replace(/[-_.]/g, "");
  if (EXACT.has(k)) return true;
  if (k.startsWith("secret")) return true; // secret, secretKey, secret_access_key, secrets
  if (k.endsWith("token")) return true; // accessToken, refresh_token, id_token (not *_tokens counts)
  if (k.endsWith("apikey") || k.endsWith("password") || k.endsWith("secret")) return true;
  return false;
}

/**
 * Paths for pino's `redact` (fast-redact syntax): the fixed shapes the gateway logs most, as a
 * first line of defence; the object walker catches every other depth and spelling.
 */
export const PINO_REDACT_PATHS: readonly string[] = [
  "authorization",
  "apiKey",
  "api_key",
  "password",
  "token",
  "credentials",
  "headers.authorization",
  'headers["x-api-key"]',
  'headers["x-blob-encryption-key"]',
  "req.headers.authorization",
  'req.headers["x-api-key"]',
  'req.headers["x-blob-encryption-key"]',
  "*.apiKey",
  "*.api_key",
  "*.credentials",
  "*.secretKey",
  "*.accessKey",
  "*.sessionToken",
  "*.password",
  "*.token",
  "*.authorization",
];
