/**
 * The authenticator a process's configuration selects (GATEWAY_AUTH_MODE): open (embedded
 * default, loopback only), api_key (distributed default, keys verified against the store) or
 * trusted_header (GATEWAY_TRUSTED_HEADER_SECRET). Throws AuthConfigError at start-up for a
 * combination createAuthenticator refuses (open in distributed mode or on a public host).
 */
import type { GatewayConfig } from "@byok/config";
import type { Authenticator } from "../auth.js";
import type { ApiKeyVerifier } from "./api-key.js";
import { AuthConfigError, createAuthenticator } from "./select.js";

export interface AuthBackends {
  /** `store.apiKeys` of @byok/store. */
  keys: ApiKeyVerifier;
  /** Trusted-header mode: accept only tenants that exist in the store. */
  tenantExists?: (tenantId: string) => Promise<boolean>;
}

export function authenticatorFromConfig(config: GatewayConfig, backends: AuthBackends): Authenticator {
  const deployment = config.mode;
  switch (config.auth.mode) {
    case "open":
      return createAuthenticator({ deployment, listenHost: config.host, auth: { mode: "open", tenantId: config.defaultTenant } });
    case "api_key":
      return createAuthenticator({ deployment, listenHost: config.host, auth: { mode: "api_key", keys: backends.keys } });
    case "trusted_header": {
      const secret = config.auth.trustedHeaderSecret;
      if (secret === undefined) throw new AuthConfigError("trusted_header mode needs GATEWAY_TRUSTED_HEADER_SECRET");
      return createAuthenticator({
        deployment,
        listenHost: config.host,
        auth: { mode: "trusted_header", secret, ...(backends.tenantExists ? { tenantExists: backends.tenantExists } : {}) },
      });
    }
  }
}
