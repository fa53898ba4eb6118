/**
 * Everything a Cursor client calls besides the agent protocol, for one process: sign-in and
 * tokens, the per-tenant model catalogue (`/v1/models` and the aiserver.v1 model calls), the
 * rest of the aiserver.v1 control plane, and `/v1/traces`. The edge mounts `handle` in front of
 * the agent routes and authenticates every agent call with `auth` (tokens and raw keys).
 */
import type { GatewayConfig, TokenSigningKey } from "@byok/config";
import type { GatewayStore } from "@byok/store";
import type { GatewayMetrics, Logger } from "@byok/telemetry";
import { createPrivacyLookup, loadTenantCatalogue, modelsListBody, type TenantCatalogue } from "./catalogue/catalogue.js";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { createProcedureFallback } from "./connect/fallback.js";
import { registerControlPlaneProcedures } from "./connect/services.js";
import { createAuthRoutes, EXCHANGE_PATH, OAUTH_TOKEN_PATH } from "./http/auth-routes.js";
import { BodyTooLarge, headersOf, readSmall, respond, sendJson, type NodeRequest, type NodeResponse } from "./http/json.js";
import { createSubjectChecker, withTokens, type HeaderAuthenticator, type PrincipalLike } from "./tokens/authenticator.js";
import { createTokenService } from "./tokens/tokens.js";
import { ConnectError } from "@connectrpc/connect";

export const MODELS_PATH = "/v1/models";
export const TRACES_PATH = "/v1/traces";

export interface ControlPlaneDeps {
  config: GatewayConfig;
  store: Pick<GatewayStore, "routes" | "tenants" | "apiKeys">;
  /** The process's own authenticator (API key, trusted header or open). */
  baseAuth: HeaderAuthenticator;
  /** Signing keys (tokenKeysFor); undefined: sign-in answers 503, raw keys keep working. */
  tokenKeys: TokenSigningKey[] | undefined;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Forwards a client's OTLP body (default: fetch to GATEWAY_TRACES_FORWARD_URL). */
  forwardTraces?: (body: Buffer, contentType: string) => Promise<void>;
}

export interface ControlPlane {
  /** Authenticates every call: gateway session tokens and everything `baseAuth` accepts. */
  auth: HeaderAuthenticator<PrincipalLike>;
  /** The tenant's catalogue (for `/v1/models` in other shapes, e.g. the compat endpoints). */
  catalogue(tenantId: string): Promise<TenantCatalogue>;
  /**
   * The tenant's policy says `privacyMode: enforced`: the edge treats each of its requests as
   * `x-ghost-mode: true`. Cached for GATEWAY_CONTENT_POLICY_CACHE_MS, like the workers' lookup.
   */
  privacyEnforced(tenantId: string): Promise<boolean>;
  /**
   * Registers the aiserver.v1 control-plane procedures on the edge's Connect router; `principal`
   * is the call's principal as the edge authenticated it (with `auth`) before reading the body.
   */
  routes(router: ConnectRouter, principal: (ctx: HandlerContext) => Promise<PrincipalLike>): void;
  /**
   * Serves `req` when its path belongs to the control plane and returns true; false otherwise.
   * The edge calls it for paths its router has no procedure for: sign-in, `/v1/models`,
   * `/v1/traces`, and every other `/aiserver.v1.*` path (`unimplemented`, counted).
   */
  handle(req: NodeRequest, res: NodeResponse): boolean;
}

export function createControlPlane(deps: ControlPlaneDeps): ControlPlane {
  const cp = deps.config.controlPlane;
  const tokens =
    deps.tokenKeys === undefined
      ? undefined
      : createTokenService({ keys: deps.tokenKeys, issuer: cp.tokenIssuer, accessTtlS: cp.accessTokenTtlS, refreshTtlS: cp.refreshTokenTtlS });
  const checker = createSubjectChecker({ keys: deps.store.apiKeys, recheckMs: cp.tokenKeyRecheckMs });
  const auth: HeaderAuthenticator<PrincipalLike> = tokens ? withTokens(deps.baseAuth, { tokens, checker }) : deps.baseAuth;
  const catalogue = (tenantId: string) => loadTenantCatalogue(deps.store, tenantId, cp.defaultModel);
  const privacyEnforced = createPrivacyLookup(deps.store, deps.config.timers.contentPolicyCacheMs);
  const signIn = createAuthRoutes({ tokens, checker, base: deps.baseAuth, metrics: deps.metrics, logger: deps.logger });
  const serviceDeps = { config: cp, metrics: deps.metrics, authenticate: (h: Headers) => auth.authenticate(h), catalogue };
  const fallback = createProcedureFallback(serviceDeps);
  const forward = deps.forwardTraces ?? (cp.tracesForwardUrl ? fetchForwarder(cp.tracesForwardUrl) : undefined);

  const fail = (res: NodeResponse, err: unknown) => {
    if (err instanceof ConnectError) return sendJson(res, 401, { error: "unauthenticated", message: err.rawMessage });
    deps.logger.error({ err: err instanceof Error ? err.name : "unknown" }, "control-plane call failed");
    if (!res.headersSent) sendJson(res, 503, { error: "unavailable", message: "The gateway could not answer; retry shortly." });
  };

  const models = async (req: NodeRequest, res: NodeResponse) => {
    if (req.method !== "GET") return sendJson(res, 405, { error: "method_not_allowed", message: `${MODELS_PATH} takes GET` }, { allow: "GET" });
    const principal = await auth.authenticate(headersOf(req));
    sendJson(res, 200, modelsListBody(await catalogue(principal.tenantId)));
  };

  const traces = async (req: NodeRequest, res: NodeResponse) => {
    if (req.method !== "POST") return sendJson(res, 405, { error: "method_not_allowed", message: `${TRACES_PATH} takes POST` }, { allow: "POST" });
    await auth.authenticate(headersOf(req));
    let body: Buffer;
    try {
      body = await readSmall(req, deps.config.limits.maxPayloadBytes);
    } catch (err) {
      if (err instanceof BodyTooLarge) return sendJson(res, 413, { error: "invalid_argument", message: err.message });
      throw err;
    }
    const contentType = req.headers["content-type"] ?? "application/x-protobuf";
    deps.metrics.clientTraceExports.inc({ outcome: forward ? "forwarded" : "dropped" });
    if (forward) {
      forward(body, contentType).catch((err: unknown) => deps.logger.debug({ err: err instanceof Error ? err.message : "unknown" }, "client traces not forwarded"));
    }
    // OTLP/HTTP success: an empty ExportTraceServiceResponse in the request's encoding.
    if (/json/.test(contentType)) sendJson(res, 200, {});
    else {
      respond(res, 200, { "content-type": "application/x-protobuf" });
    }
  };

  return {
    auth,
    catalogue,
    privacyEnforced,
    routes: (router, principal) => registerControlPlaneProcedures(router, { ...serviceDeps, principal }),
    handle(req, res) {
      const path = (req.url ?? "").split("?")[0] ?? "";
      const run = (fn: (req: NodeRequest, res: NodeResponse) => Promise<void>) => {
        fn(req, res).catch((err: unknown) => fail(res, err));
        return true;
      };
      switch (path) {
        case EXCHANGE_PATH:
          return run(signIn.exchange);
        case OAUTH_TOKEN_PATH:
          return run(signIn.oauthToken);
        case MODELS_PATH:
          return run(models);
        case TRACES_PATH:
          return run(traces);
      }
      if (path.startsWith("/aiserver.v1.")) return run((q, s) => fallback(q, s, path));
      return false;
    },
  };
}

function fetchForwarder(url: string) {
  return async (body: Buffer, contentType: string) => {
    const r = await fetch(url, { method: "POST", headers: { "content-type": contentType }, body: new Uint8Array(body), signal: AbortSignal.timeout(10_000) });
    await r.body?.cancel();
    if (!r.ok) throw new Error(`the collector answered HTTP ${r.status}`);
  };
}
