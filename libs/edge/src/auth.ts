/** Who a request belongs to. Every bus lookup is scoped by the tenant (docs/architecture.md property 9). */
export interface Principal {
  tenantId: string;
  userId: string | undefined;
  /** The gateway API key used, when one was (per-key rate limits, ledger rows). */
  keyId?: string | undefined;
}

/**
 * Authenticates a BidiAppend or RunSSE from its headers. Throws a ConnectError `unauthenticated`
 * when the credentials are missing or bad. The tenancy issue adds API-key and trusted-header modes.
 */
export interface Authenticator {
  authenticate(headers: Headers): Promise<Principal>;
}

/** Open mode: embedded mode's default (loopback only); everything belongs to one tenant. */
export function createOpenAuthenticator(tenantId: string): Authenticator {
  return { authenticate: async () => ({ tenantId, userId: undefined }) };
}
