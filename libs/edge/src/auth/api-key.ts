/**
 * API-key mode: the client sends a gateway key (`byok_<prefix>_<secret>`) as
 * `Authorization: Bearer <key>` or in `x-gateway-api-key`. The key names the tenant (and
 * optionally the user); it is looked up by prefix and compared by hash in constant time.
 */
import type { Authenticator } from "../auth.js";
import type { GatewayPrincipal } from "./principal.js";
import { unauthenticated } from "./unauthenticated.js";

export const API_KEY_HEADER = "x-gateway-api-key";

/** The verification port; `GatewayStore.apiKeys` from @byok/store implements it. */
export interface ApiKeyVerifier {
  verify(
    presented: string,
    now?: Date,
  ): Promise<
    | { status: "ok"; key: { tenantId: string; keyId: string; userId: string | undefined } }
    | { status: "invalid" }
    | { status: "expired" | "revoked"; keyId: string; tenantId: string }
  >;
}

export interface ApiKeyAuthenticator extends Authenticator {
  authenticate(headers: Headers): Promise<GatewayPrincipal>;
}

/**
 * Guarantees: resolves only for a known, unrevoked, unexpired key; otherwise rejects with
 * ConnectError `unauthenticated` + ERROR_BAD_API_KEY whose message says what is wrong
 * (missing, invalid, revoked, expired) without echoing the key. A store failure propagates
 * as thrown (the edge answers it `unavailable`, libs/edge/src/auth.ts `authenticateCaller`).
 */
export function createApiKeyAuthenticator(opts: { keys: ApiKeyVerifier; now?: () => Date }): ApiKeyAuthenticator {
  const now = opts.now ?? (() => new Date());
  return {
    async authenticate(headers) {
      const presented = presentedKey(headers);
      if (presented === undefined) {
        throw unauthenticated(`Missing gateway API key: send "Authorization: Bearer <key>" or "${API_KEY_HEADER}: <key>".`);
      }
      const v = await opts.keys.verify(presented, now());
      switch (v.status) {
        case "ok":
          return { tenantId: v.key.tenantId, userId: v.key.userId, keyId: v.key.keyId, via: "api_key" };
        case "revoked":
          throw unauthenticated("This gateway API key was revoked.");
        case "expired":
          throw unauthenticated("This gateway API key has expired.");
        case "invalid":
          throw unauthenticated("Invalid gateway API key.");
      }
    },
  };
}

/** The dedicated header wins over Authorization (Cursor may put its own token there). */
export function presentedKey(headers: Headers): string | undefined {
  const dedicated = headers.get(API_KEY_HEADER)?.trim();
  if (dedicated) return dedicated;
  const auth = headers.get("authorization")?.trim();
  const m = auth === undefined ? null : /^Bearer\s+(\S+)$/i.exec(auth);
  return m?.[1];
}
