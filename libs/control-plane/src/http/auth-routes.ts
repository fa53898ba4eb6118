/**
 * Sign-in for Cursor's clients (docs/control-plane.md "Tokens"):
 * - `POST /auth/exchange_user_api_key`: the Bearer is the user's gateway API key (what Cursor
 *   calls the user's API key) — or a refresh token, which is how Cursor's CLI refreshes — and
 *   the answer is `{accessToken, refreshToken, authId}`.
 * - `POST /oauth/token` (`grant_type=refresh_token`, JSON or form body): the IDE's refresh,
 *   answered OAuth-style.
 * Tokens are written only into these response bodies: never logged, never in an error.
 */
import { ConnectError } from "@connectrpc/connect";
import type { GatewayMetrics, Logger } from "@byok/telemetry";
import { bearerToken, verifiedSubject, type HeaderAuthenticator, type SubjectChecker } from "../tokens/authenticator.js";
import type { TokenService, TokenSubject } from "../tokens/tokens.js";
import { BodyTooLarge, headersOf, readSmall, sendJson, type NodeRequest, type NodeResponse } from "./json.js";

export const EXCHANGE_PATH = "/auth/exchange_user_api_key";
export const OAUTH_TOKEN_PATH = "/oauth/token";

/** Sign-in bodies are tiny (`{}` or one refresh token). */
const MAX_AUTH_BODY = 16 * 1024;

export interface AuthRouteDeps {
  /** Undefined when no signing keys are configured: sign-in answers 503 saying so. */
  tokens: TokenService | undefined;
  checker: SubjectChecker;
  /** The process's own authenticator (API key, trusted header or open). */
  base: HeaderAuthenticator;
  metrics: GatewayMetrics;
  logger: Logger;
}

export function createAuthRoutes(deps: AuthRouteDeps) {
  const noKeys = (res: NodeResponse) =>
    sendJson(res, 503, { error: "unavailable", message: "This gateway has no token signing keys configured (GATEWAY_TOKEN_KEYS); use the gateway API key directly." });

  return {
    async exchange(req: NodeRequest, res: NodeResponse): Promise<void> {
      if (req.method !== "POST") return sendJson(res, 405, { error: "method_not_allowed", message: `${EXCHANGE_PATH} takes POST` }, { allow: "POST" });
      const tokens = deps.tokens;
      if (tokens === undefined) return noKeys(res);
      try {
        await readSmall(req, MAX_AUTH_BODY);
      } catch (err) {
        if (err instanceof BodyTooLarge) return sendJson(res, 413, { error: "invalid_argument", message: err.message });
        throw err;
      }
      const headers = headersOf(req);
      const refresh = bearerToken(headers);
      let subject: TokenSubject;
      try {
        subject =
          refresh !== undefined
            ? await verifiedSubject({ tokens, checker: deps.checker }, refresh, "refresh", true)
            : toSubject(await deps.base.authenticate(headers));
      } catch (err) {
        return refuse(res, deps, err, refresh !== undefined ? "refresh" : "api_key");
      }
      const issued = await tokens.issue(subject);
      deps.metrics.sessionTokens.inc({ grant: refresh !== undefined ? "refresh" : "api_key", outcome: "issued" });
      sendJson(res, 200, { accessToken: issued.accessToken, refreshToken: issued.refreshToken, authId: issued.authId });
    },

    async oauthToken(req: NodeRequest, res: NodeResponse): Promise<void> {
      if (req.method !== "POST") return sendJson(res, 405, { error: "invalid_request", error_description: `${OAUTH_TOKEN_PATH} takes POST` }, { allow: "POST" });
      const tokens = deps.tokens;
      if (tokens === undefined) return noKeys(res);
      let form: Record<string, string>;
      try {
        form = parseForm(await readSmall(req, MAX_AUTH_BODY), req.headers["content-type"] ?? "");
      } catch (err) {
        return sendJson(res, 400, { error: "invalid_request", error_description: err instanceof BodyTooLarge ? err.message : "The body must be JSON or form-encoded." });
      }
      if (form.grant_type !== "refresh_token") {
        return sendJson(res, 400, { error: "unsupported_grant_type", error_description: "Only grant_type=refresh_token is served." });
      }
      if (!form.refresh_token) return sendJson(res, 400, { error: "invalid_request", error_description: "refresh_token is missing." });
      let subject: TokenSubject;
      try {
        subject = await verifiedSubject({ tokens, checker: deps.checker }, form.refresh_token, "refresh", true);
      } catch (err) {
        deps.metrics.sessionTokens.inc({ grant: "oauth_refresh", outcome: "refused" });
        const message = err instanceof ConnectError ? err.rawMessage : "The refresh token was refused.";
        return sendJson(res, 401, { error: "invalid_grant", error_description: message, access_token: "", id_token: "", shouldLogout: true });
      }
      const issued = await tokens.issue(subject);
      deps.metrics.sessionTokens.inc({ grant: "oauth_refresh", outcome: "issued" });
      sendJson(res, 200, {
        access_token: issued.accessToken,
        id_token: issued.accessToken,
        refresh_token: issued.refreshToken,
        token_type: "Bearer",
        expires_in: issued.expiresIn,
        shouldLogout: false,
      });
    },
  };
}

function toSubject(p: { tenantId: string; userId: string | undefined; keyId?: string | undefined }): TokenSubject {
  return { tenantId: p.tenantId, userId: p.userId, keyId: p.keyId };
}

function refuse(res: NodeResponse, deps: AuthRouteDeps, err: unknown, grant: "refresh" | "api_key"): void {
  if (!(err instanceof ConnectError)) {
    deps.logger.error({ err: err instanceof Error ? err.name : "unknown" }, "sign-in failed");
    return sendJson(res, 503, { error: "unavailable", message: "The gateway could not check the credentials; retry shortly." });
  }
  deps.metrics.sessionTokens.inc({ grant, outcome: "refused" });
  sendJson(res, 401, { error: "unauthenticated", message: err.rawMessage });
}

function parseForm(body: Buffer, contentType: string): Record<string, string> {
  const text = body.toString("utf8");
  if (/json/.test(contentType) || text.trimStart().startsWith("{")) {
    const v: unknown = JSON.parse(text);
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("not an object");
    return Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === "string"));
  }
  return Object.fromEntries(new URLSearchParams(text));
}
