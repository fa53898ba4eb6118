import { ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { Logger } from "@byok/telemetry";
import { unavailable } from "./errors.js";

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

/**
 * The principal the edge authenticated a procedure call with, before reading its body
 * (libs/edge/src/connect-edge.ts); unset for gRPC calls, which connect-node serves unguarded.
 */
export const PRINCIPAL = createContextKey<Principal | undefined>(undefined, { description: "the authenticated principal" });

/** The call's principal: the one the edge authenticated, else authenticated from the headers now. */
export async function principalOf(ctx: HandlerContext, auth: Authenticator, logger: Logger): Promise<Principal> {
  return ctx.values.get(PRINCIPAL) ?? authenticateCaller(auth, ctx.requestHeader, logger);
}

/**
 * Authenticates a caller at the edge. A failure that is not the caller's (the key store
 * unreachable) is `unavailable` with a retry hint, never the store's own error text, which
 * goes to the log.
 */
export async function authenticateCaller(auth: Authenticator, headers: Headers, logger: Logger): Promise<Principal> {
  try {
    return await auth.authenticate(headers);
  } catch (err) {
    if (err instanceof ConnectError) throw err;
    logger.error({ err: err instanceof Error ? err.message : "unknown" }, "could not authenticate a caller");
    throw unavailable("The gateway could not check the credentials (its key store is unavailable); retry shortly.");
  }
}
