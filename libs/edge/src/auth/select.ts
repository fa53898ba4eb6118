/**
 * Picks the authenticator for a deployment. Open mode is embedded mode's default and only
 * for loopback listeners; distributed mode refuses it (createAuthenticator throws at start-up).
 */
import { createOpenAuthenticator, type Authenticator } from "../auth.js";
import { createApiKeyAuthenticator, type ApiKeyVerifier } from "./api-key.js";
import { createTrustedHeaderAuthenticator, type TrustedHeaderOptions } from "./trusted-header.js";

export type AuthMode =
  | { mode: "open"; tenantId: string }
  | { mode: "api_key"; keys: ApiKeyVerifier }
  | ({ mode: "trusted_header" } & TrustedHeaderOptions);

export interface AuthSelection {
  deployment: "embedded" | "distributed";
  /** Host the ingress listens on; open mode requires a loopback address. */
  listenHost: string;
  auth: AuthMode;
}

export class AuthConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AuthConfigError";
  }
}

/** Throws AuthConfigError for open mode in distributed mode or on a non-loopback host. */
export function createAuthenticator(sel: AuthSelection): Authenticator {
  const { auth } = sel;
  switch (auth.mode) {
    case "open":
      if (sel.deployment === "distributed") {
        throw new AuthConfigError("open authentication is refused in distributed mode: use api_key or trusted_header");
      }
      if (!isLoopback(sel.listenHost)) {
        throw new AuthConfigError(`open authentication only listens on loopback, not ${sel.listenHost}`);
      }
      return createOpenAuthenticator(auth.tenantId);
    case "api_key":
      return createApiKeyAuthenticator({ keys: auth.keys });
    case "trusted_header":
      return createTrustedHeaderAuthenticator(auth);
  }
}

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h);
}
