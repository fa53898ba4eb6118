import type { IncomingMessage, ServerResponse } from "node:http";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Bus, RunDispatcher } from "@byok/bus";
import { metricsHandler, type GatewayMetrics, type Logger } from "@byok/telemetry";
import { BidiService } from "@byok/wire";
import type { Authenticator } from "./auth.js";
import { createBidiAppendHandler } from "./bidi-append.js";
import { createRunSseFrames } from "./run-sse.js";
import { checkRunSseBody, readSmallBody, writeStreamError } from "./run-sse-body.js";
import { serveRunSse } from "./run-sse-stream.js";

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
    },
  });
  const runSseFrames = createRunSseFrames(deps);
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
    // RunSSE is served here rather than by connect-node: stored frames are forwarded as they
    // are (no decode and re-encode per frame), in Connect's streaming format.
    const eventStream = req.headers["x-cursor-streaming"] === "true";
    void readSmallBody(req).then(
      (body) => {
        const contentType = eventStream ? "text/event-stream" : "application/connect+proto";
        if (!body) return writeStreamError(res, contentType, "a RunSSE body must be one small envelope holding an agent.v1.BidiRequestId; this one is over 64 KiB");
        const check = checkRunSseBody(body);
        if (!check.ok) return writeStreamError(res, contentType, check.reason);
        return serveRunSse(req, res, body, runSseFrames, deps.logger);
      },
      (err: unknown) => {
        deps.logger.debug({ err }, "RunSSE body could not be read");
        res.destroy();
      },
    );
  };
}
