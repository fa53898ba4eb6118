import type { IncomingMessage, ServerResponse } from "node:http";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Bus, RunDispatcher } from "@byok/bus";
import { metricsHandler, type GatewayMetrics, type Logger } from "@byok/telemetry";
import { AgentService, BidiService } from "@byok/wire";
import type { Authenticator } from "./auth.js";
import { createBidiAppendHandler } from "./bidi-append.js";
import { createRunSseHandler } from "./run-sse.js";
import { checkRunSseBody, readSmallBody, replayBody, writeStreamError } from "./run-sse-body.js";

export const RUN_SSE_PATH = "/agent.v1.AgentService/RunSSE";
export const BIDI_APPEND_PATH = "/aiserver.v1.BidiService/BidiAppend";

export interface IngressDeps {
  bus: Bus;
  dispatcher: RunDispatcher;
  auth: Authenticator;
  timers: { heartbeatMs: number; notFoundWaitMs: number; newGenerationWaitMs: number };
  limits: { maxPayloadBytes: number };
  logger: Logger;
  metrics: GatewayMetrics;
  /** Readiness probe: resolves when the process's dependencies answer. */
  ready(): Promise<void>;
}

export type NodeHandler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The Connect edge: BidiAppend (unary, proto + JSON, gzip bodies) and RunSSE (server stream),
 * plus /healthz, /readyz and /metrics. Works over HTTP/1.1 and HTTP/2 alike.
 */
export function createIngressHandler(deps: IngressDeps): NodeHandler {
  const connect = connectNodeAdapter({
    // Hex doubles the payload; leave room for the envelope and the other fields.
    readMaxBytes: deps.limits.maxPayloadBytes * 2 + 64 * 1024,
    routes(router) {
      router.rpc(BidiService.method.bidiAppend, createBidiAppendHandler(deps));
      router.rpc(AgentService.method.runSSE, createRunSseHandler(deps));
    },
  });
  const metrics = metricsHandler(deps.metrics);
  return (req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (req.method === "GET" && path === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
      return;
    }
    if (req.method === "GET" && path === "/readyz") {
      deps.ready().then(
        () => res.writeHead(200, { "content-type": "text/plain" }).end("ready\n"),
        (err: unknown) => {
          deps.logger.warn({ err }, "not ready");
          res.writeHead(503, { "content-type": "text/plain" }).end("not ready\n");
        },
      );
      return;
    }
    if (req.method === "GET" && path === "/metrics") {
      metrics().then((m) => res.writeHead(m.status, { "content-type": m.contentType }).end(m.body));
      return;
    }
    if (path !== RUN_SSE_PATH || req.method !== "POST") {
      connect(req, res);
      return;
    }
    const eventStream = req.headers["x-cursor-streaming"] === "true";
    if (eventStream) useEventStreamContentType(res);
    void readSmallBody(req).then(
      (body) => {
        const contentType = eventStream ? "text/event-stream" : "application/connect+proto";
        if (!body) return writeStreamError(res, contentType, "a RunSSE body must be one small envelope holding an agent.v1.BidiRequestId; this one is over 64 KiB");
        const check = checkRunSseBody(body);
        if (!check.ok) return writeStreamError(res, contentType, check.reason);
        replayBody(req, body);
        connect(req, res);
      },
      (err: unknown) => {
        deps.logger.debug({ err }, "RunSSE body could not be read");
        res.destroy();
      },
    );
  };
}

/**
 * Cursor expects `text/event-stream` on RunSSE when it sends `x-cursor-streaming: true`; the
 * body stays plain Connect envelopes. Connect sets `application/connect+proto`, so the header
 * is rewritten as it is written.
 */
function useEventStreamContentType(res: ServerResponse): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  (res as { writeHead: (...args: unknown[]) => ServerResponse }).writeHead = (...args: unknown[]) => {
    const headers = args.find((a, i) => i > 0 && typeof a === "object" && a !== null) as
      | Record<string, unknown>
      | unknown[]
      | undefined;
    if (Array.isArray(headers)) {
      for (let i = 0; i + 1 < headers.length; i += 2) {
        if (String(headers[i]).toLowerCase() === "content-type") headers[i + 1] = "text/event-stream";
      }
    } else if (headers) {
      for (const k of Object.keys(headers)) if (k.toLowerCase() === "content-type") delete headers[k];
      headers["content-type"] = "text/event-stream";
    }
    if (res.hasHeader("content-type")) res.setHeader("content-type", "text/event-stream");
    return writeHead(...args);
  };
}
