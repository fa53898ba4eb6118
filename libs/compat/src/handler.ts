import type { IncomingMessage, ServerResponse } from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { ATTR, SPAN } from "@byok/telemetry";
import { countTokens, messages } from "./anthropic/messages.js";
import type { CompatCallDeps, CompatPrincipal } from "./call.js";
import type { Endpoint } from "./endpoint.js";
import { asCompatError, CompatError } from "./errors.js";
import { readJsonBody, sendJson } from "./http.js";
import { chatCompletions } from "./openai/chat.js";
import { responses } from "./openai/responses.js";

const tracer = trace.getTracer("@byok/compat");

/** The OpenAI- and Anthropic-compatible paths this handler serves. */
export const COMPAT_PATHS = ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/messages/count_tokens"] as const;

const ENDPOINTS: Record<(typeof COMPAT_PATHS)[number], { endpoint: Endpoint; anthropic: boolean }> = {
  "/v1/chat/completions": { endpoint: chatCompletions, anthropic: false },
  "/v1/responses": { endpoint: responses, anthropic: false },
  "/v1/messages": { endpoint: messages, anthropic: true },
  "/v1/messages/count_tokens": { endpoint: countTokens, anthropic: true },
};

/** Authenticates a request from its headers (the edge's gateway-key authenticator); throws ConnectError `unauthenticated`. */
export interface CompatAuthenticator {
  authenticate(headers: Headers): Promise<{ tenantId: string; userId: string | undefined; keyId?: string | undefined }>;
}

export interface CompatHandlerDeps extends CompatCallDeps {
  auth: CompatAuthenticator;
  /** Largest accepted request body, bytes. */
  maxBodyBytes: number;
}

/** Serves a request when its path is a compatible endpoint's; returns false for any other path. */
export type CompatHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

function headersOf(req: IncomingMessage, anthropic: boolean): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (k.startsWith(":")) continue; // HTTP/2 pseudo-headers
    if (typeof v === "string") h.set(k, v);
    else if (Array.isArray(v)) h.set(k, v.join(", "));
  }
  // Anthropic clients send their key as x-api-key: here that is the gateway key.
  const apiKey = h.get("x-api-key");
  if (anthropic && apiKey && !h.has("x-gateway-api-key")) h.set("x-gateway-api-key", apiKey);
  return h;
}

async function principalOf(auth: CompatAuthenticator, headers: Headers): Promise<CompatPrincipal> {
  try {
    const p = await auth.authenticate(headers);
    return { tenantId: p.tenantId, userId: p.userId, keyId: p.keyId };
  } catch (err) {
    if (err instanceof ConnectError && err.code === Code.Unauthenticated) throw new CompatError("authentication", err.rawMessage);
    throw new CompatError("unavailable", "The gateway could not check the API key right now; please retry.");
  }
}

/**
 * OpenAI- and Anthropic-compatible endpoints over the gateway's routes, ledger, budgets, rate
 * limits and retries (docs/compat.md). Every failure is answered in the vendor's error shape
 * with its HTTP status; no request content is logged or stored.
 */
export function createCompatHandler(deps: CompatHandlerDeps): CompatHandler {
  return (req, res) => {
    const path = (req.url ?? "").split("?")[0] as (typeof COMPAT_PATHS)[number];
    const entry = ENDPOINTS[path];
    if (entry === undefined) return false;
    const { endpoint, anthropic } = entry;
    const gone = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) gone.abort();
    });
    // The request's span: its provider calls (one CLIENT span per attempt) are its children.
    const span = tracer.startSpan(SPAN.compatRequest, { kind: SpanKind.SERVER, attributes: { [ATTR.httpRoute]: path } });
    void context.with(trace.setSpan(context.active(), span), async () => {
      try {
        if (req.method !== "POST") throw new CompatError("invalid_request", `${req.method ?? "GET"} is not supported on ${path}; use POST`);
        const principal = await principalOf(deps.auth, headersOf(req, anthropic));
        span.setAttribute(ATTR.tenantId, principal.tenantId);
        const body = await readJsonBody(req, deps.maxBodyBytes);
        await endpoint.serve({ deps, principal, body, res, signal: gone.signal });
      } catch (err) {
        const e = asCompatError(err);
        span.setAttribute(ATTR.errorType, e.kind);
        span.setStatus({ code: SpanStatusCode.ERROR, message: e.kind });
        if (e.kind === "internal" && !(err instanceof CompatError)) deps.logger.error({ err: err instanceof Error ? err.name : "unknown", path }, "compatible endpoint failed");
        if (res.headersSent) res.end();
        else sendJson(res, req.method === "POST" ? e.status : 405, endpoint.errorBody(e));
      } finally {
        span.setAttribute(ATTR.httpResponseStatusCode, res.statusCode);
        span.end();
      }
    });
    return true;
  };
}
