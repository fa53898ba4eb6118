/**
 * Trusted-header mode, for deployments behind an authenticating proxy: the proxy sets the
 * tenant and user headers and a shared secret header, which clients cannot know, so they
 * cannot forge the identity headers. The secret is compared in constant time.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Authenticator } from "../auth.js";
import type { GatewayPrincipal } from "./principal.js";
import { unauthenticated } from "./unauthenticated.js";

export const TRUSTED_HEADERS = {
  tenant: "x-gateway-tenant",
  user: "x-gateway-user",
  secret: "x-gateway-proxy-secret",
} as const;

/** Identifiers we accept from a proxy: no spaces or control characters, bounded length. */
const ID = /^[A-Za-z0-9._:@+-]{1,200}$/;

export interface TrustedHeaderOptions {
  /** The shared secret (at least 16 characters). Secret: never logged. */
  secret: string;
  headers?: Partial<typeof TRUSTED_HEADERS>;
  /** Optional check that the tenant exists (e.g. `id => store.tenants.get(id).then(Boolean)`). */
  tenantExists?: (tenantId: string) => Promise<boolean>;
}

/**
 * Guarantees: resolves only when the secret header matches and the tenant header is a
 * well-formed id (of an existing tenant, when `tenantExists` is given); otherwise rejects
 * with ConnectError `unauthenticated` + ERROR_BAD_API_KEY. The user header is optional.
 */
export function createTrustedHeaderAuthenticator(opts: TrustedHeaderOptions): Authenticator & {
  authenticate(headers: Headers): Promise<GatewayPrincipal>;
} {
  if (opts.secret.length < 16) throw new Error("trusted-header mode needs a shared secret of at least 16 characters");
  const names = { ...TRUSTED_HEADERS, ...opts.headers };
  const expected = digest(opts.secret);
  return {
    async authenticate(headers) {
      const presented = headers.get(names.secret);
      // Hashing both sides gives equal lengths, so timingSafeEqual never leaks the length.
      if (presented === null || !timingSafeEqual(digest(presented), expected)) {
        throw unauthenticated("Request did not come through the gateway's authenticating proxy.");
      }
      const tenantId = headers.get(names.tenant)?.trim() ?? "";
      if (!ID.test(tenantId)) throw unauthenticated(`Missing or malformed ${names.tenant} header.`);
      const user = headers.get(names.user)?.trim();
      if (user !== undefined && user !== "" && !ID.test(user)) throw unauthenticated(`Malformed ${names.user} header.`);
      if (opts.tenantExists !== undefined && !(await opts.tenantExists(tenantId))) throw unauthenticated("Unknown tenant.");
      return { tenantId, userId: user === undefined || user === "" ? undefined : user, keyId: undefined, via: "trusted_header" };
    },
  };
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}
