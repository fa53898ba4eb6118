/**
 * The admin HTTP JSON API. Every call needs `Authorization: Bearer <GATEWAY_ADMIN_KEY>`
 * (compared in constant time), or a tenant's usage read key (a `usage_read` gateway key,
 * verified by hash like any gateway key) for the routes marked `tenantReadable`, which then
 * answer for that tenant only (403 for any other tenant and for every other route). Every call
 * is written to the audit log (actor, action, target, status, and
 * ids or counts only: never a secret, key, credential or request body) before the reply is
 * sent, refusals included. Secrets flow in one
 * direction: a gateway key's secret is returned once by POST .../keys, provider credentials
 * are accepted by PUT .../credentials/:ref and are never returned.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { isStoreError, type GatewayStore } from "@byok/store";
import { HttpError, sendJson, sendText } from "./http.js";
import { match } from "./router.js";
import { adminRoutes, type AdminContext, type Caller } from "./routes.js";

export interface AdminApiOptions {
  store: GatewayStore;
  /** GATEWAY_ADMIN_KEY (at least 16 characters). Secret. */
  adminKey: string;
  /** Reports unexpected errors (never given secrets: the request body is not included). */
  onError?: (err: unknown) => void;
  /**
   * Told about every answered request: the matched route as `METHOD /pattern` (`unmatched`
   * when none matched or the key was refused first) and the HTTP status. Feeds the process's
   * `byok_admin_requests_total`.
   */
  onAnswered?: (route: string, status: number) => void;
}

export type AdminHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function createAdminHandler(opts: AdminApiOptions): AdminHandler {
  if (opts.adminKey.length < 16) throw new Error("GATEWAY_ADMIN_KEY must be at least 16 characters");
  const expected = digest(opts.adminKey);
  const routes = adminRoutes();

  return async (req, res) => {
    const url = new URL(req.url ?? "/", "http://admin.invalid");
    const method = req.method ?? "GET";
    const audit: AdminContext["audit"] = { tenantId: undefined, action: `${method} ${url.pathname}`, target: undefined, details: {} };
    // The reply is held until the audit row is written, so a caller that saw a reply can rely
    // on its audit entry existing.
    let pending: { status: number; send: () => void } | undefined;
    let routeName = "unmatched";
    let caller: Caller | { kind: "denied"; message: string } = { kind: "denied", message: "" };
    try {
      const presented = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "")?.[1];
      caller = await callerOf(opts.store, presented, expected);
      if (caller.kind === "denied") {
        audit.action = "auth.denied";
        throw new HttpError(401, caller.message);
      }
      const found = match(routes, method, url.pathname);
      if (found === "not_found") throw new HttpError(404, "no such endpoint");
      if (found === "method_not_allowed") throw new HttpError(405, "method not allowed on this endpoint");
      routeName = `${found.route.method} ${found.route.pattern}`;
      if (caller.kind === "tenant_reader") {
        audit.tenantId = caller.tenantId;
        if (!found.route.tenantReadable) {
          audit.action = "auth.forbidden";
          throw new HttpError(403, "a usage read key may only read its own tenant's usage");
        }
      }
      const ctx: AdminContext = {
        caller,
        store: opts.store,
        req,
        url,
        audit,
        reply: (status, body) => (pending = { status, send: () => sendJson(res, status, body) }),
        replyText: (status, type, text) => (pending = { status, send: () => sendText(res, status, type, text) }),
      };
      await found.route.handle(ctx, found.params);
      if (pending === undefined) throw new Error("handler sent no reply");
    } catch (e) {
      const mapped = e instanceof HttpError ? e : isStoreError(e, "already_exists") ? new HttpError(409, e.message) : undefined;
      if (mapped === undefined) opts.onError?.(e);
      const status = mapped?.status ?? 500;
      const body = { error: mapped?.message ?? "internal error" };
      pending = { status, send: () => sendJson(res, status, body) };
    }
    await opts.store.audit
      .append({
        tenantId: audit.tenantId,
        actor: caller.kind === "tenant_reader" ? `read_key:${caller.keyId}` : "admin",
        action: audit.action,
        target: audit.target,
        details: { ...audit.details, status: pending.status },
      })
      .catch((e: unknown) => opts.onError?.(e));
    pending.send();
    opts.onAnswered?.(routeName, pending.status);
  };
}

/**
 * Who presented what: the admin key (constant-time compare of digests), else a usage read key
 * (looked up by prefix, hash compared in constant time, only keys of scope `usage_read`).
 */
async function callerOf(store: GatewayStore, presented: string | undefined, adminDigest: Buffer): Promise<Caller | { kind: "denied"; message: string }> {
  const required = "admin key or usage read key required: Authorization: Bearer <GATEWAY_ADMIN_KEY or byok_… read key>";
  if (presented === undefined) return { kind: "denied", message: required };
  if (timingSafeEqual(digest(presented), adminDigest)) return { kind: "admin" };
  const v = await store.apiKeys.verify(presented, undefined, "usage_read");
  switch (v.status) {
    case "ok":
      return { kind: "tenant_reader", tenantId: v.key.tenantId, keyId: v.key.keyId };
    case "revoked":
      return { kind: "denied", message: "this usage read key was revoked" };
    case "expired":
      return { kind: "denied", message: "this usage read key has expired" };
    case "invalid":
      return { kind: "denied", message: required };
  }
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}
