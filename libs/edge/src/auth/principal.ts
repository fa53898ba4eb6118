import type { Principal } from "../auth.js";

/**
 * A Principal with how it was authenticated. Structurally a Principal, so every
 * Authenticator here satisfies `auth.ts`'s interface; `keyId` is what per-key rate limits
 * and ledger rows need.
 */
export interface GatewayPrincipal extends Principal {
  /** The gateway API key used (api_key mode only). */
  keyId: string | undefined;
  via: "api_key" | "trusted_header" | "open";
}
