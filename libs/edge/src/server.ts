import type { IncomingMessage, ServerResponse } from "node:http";
import type { ConnectRouter } from "@connectrpc/connect";
import type { Bus, RunDispatcher } from "@byok/bus";
import type { GatewayMetrics, Logger } from "@byok/telemetry";
import { BidiService } from "@byok/wire";
import type { Authenticator } from "./auth.js";
import { createBidiAppendHandler, createClientAppender } from "./bidi-append.js";
import { RUN_PATH, serveRun } from "./run.js";
import type { OpenStreams } from "./open-streams.js";
import { createConnectEdge, writeUnknownProcedure, type NodeHandler } from "./connect-edge.js";
import { createRunSseFrames } from "./run-sse.js";
import { MAX_RUN_SSE_BODY, readSmallBody, runSseRequestId, writeStreamError } from "./run-sse-body.js";
import { headersOf, serveRunSse } from "./run-sse-stream.js";
import { invalidArgument, resourceExhausted } from "./errors.js";
import { writeUnaryError } from "./connect-edge.js";

export const RUN_SSE_PATH = "/agent.v1.AgentService/RunSSE";
export const BIDI_APPEND_PATH = "/aiserver.v1.BidiService/BidiAppend";

export interface EdgeDeps {
  bus: Bus;
  dispatcher: RunDispatcher;
  auth: Authenticator;
  timers: { heartbeatMs: number; notFoundWaitMs: number; newGenerationWaitMs: number; readerTtlMs: number };
  limits: { maxPayloadBytes: number };
  logger: Logger;
  metrics: GatewayMetrics;
  /** The replica's open RunSSE streams: the stream limit and the shutdown drain. */
  streams: OpenStreams;
  /** The control plane (@byok/control-plane): its procedures join the router; its other paths come before the 404. */
  controlPlane?: EdgeExtension;
}

/** What the control plane adds to the edge. */
export interface EdgeExtension {
  routes(router: ConnectRouter): void;
  /** True when it served the request. */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
  /** The tenant's policy enforces privacy mode: its runs are ghost-mode runs whatever the header says. */
  privacyEnforced(tenantId: string): Promise<boolean>;
}

export type { NodeHandler };

/**
 * The Connect edge: BidiAppend (unary, proto + JSON, gzip bodies) and RunSSE (server stream).
 * Works over HTTP/1.1 and HTTP/2 alike. The probe routes are the process's (libs/process).
 */
export function createEdgeHandler(deps: EdgeDeps): NodeHandler {
  const cp = deps.controlPlane;
  const appendDeps = { ...deps, ...(cp ? { privacyEnforced: (tenantId: string) => cp.privacyEnforced(tenantId) } : {}) };
  const connect = createConnectEdge({
    // Hex doubles the payload; leave room for the envelope and the other fields.
    readMaxBytes: deps.limits.maxPayloadBytes * 2 + 64 * 1024,
    routes(router) {
      router.rpc(BidiService.method.bidiAppend, createBidiAppendHandler(appendDeps));
      deps.controlPlane?.routes(router);
    },
  });
  const runSseFrames = createRunSseFrames(deps);
  const runDeps = { auth: deps.auth, append: createClientAppender(appendDeps), frames: runSseFrames, maxMessageBytes: deps.limits.maxPayloadBytes, logger: deps.logger };
  const serveRunRoute = (req: IncomingMessage, res: ServerResponse) => {
    const refuse = (status: number, message: string) => {
      req.resume();
      writeUnaryError(res, status, invalidArgument(message));
    };
    if (req.httpVersionMajor !== 2) return refuse(505, "agent.v1.AgentService/Run is a bidirectional stream and needs HTTP/2; over HTTP/1.1 use RunSSE + BidiAppend.");
    if (req.method !== "POST") return refuse(405, `agent.v1.AgentService/Run takes POST, not ${req.method}.`);
    const contentType = req.headers["content-type"] ?? "";
    if (!/^application\/connect\+proto\s*(;|$)/i.test(contentType)) {
      return refuse(415, `agent.v1.AgentService/Run takes content-type application/connect+proto (a Connect bidi stream); got ${contentType ? `'${contentType.slice(0, 80)}'` : "none"}.`);
    }
    const admitted = deps.streams.admit();
    if (!admitted.ok) return writeStreamError(res, "application/connect+proto", admitted.error);
    void serveRun(req, res, runDeps, admitted);
  };
  return (req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path === RUN_PATH) {
      serveRunRoute(req, res);
      return;
    }
    if (path !== RUN_SSE_PATH) {
      const procedure = connect.route(path ?? "");
      if (procedure) procedure(req, res);
      else if (!deps.controlPlane?.handle(req, res)) writeUnknownProcedure(res, path ?? "");
      return;
    }
    // RunSSE is served here rather than by connect-node: stored frames are forwarded as they
    // are (no decode and re-encode per frame), in Connect's streaming format.
    if (req.method !== "POST") {
      writeUnaryError(res, 405, invalidArgument(`agent.v1.AgentService/RunSSE takes POST, not ${req.method}.`));
      return;
    }
    const headers = headersOf(req);
    const contentType = headers.get("content-type") ?? "";
    if (!/^application\/connect\+proto\s*(;|$)/i.test(contentType)) {
      req.resume();
      writeUnaryError(res, 415, invalidArgument(
        `agent.v1.AgentService/RunSSE takes content-type application/connect+proto (a Connect server stream); got ${contentType ? `'${contentType.slice(0, 80)}'` : "none"}.`,
      ));
      return;
    }
    const streamType = headers.get("x-cursor-streaming") === "true" ? "text/event-stream" : "application/connect+proto";
    void readSmallBody(req).then(
      (body) => {
        if (!body) {
          req.resume();
          return writeStreamError(res, streamType, resourceExhausted(`a RunSSE body is one small envelope holding an agent.v1.BidiRequestId; this one is over ${MAX_RUN_SSE_BODY} bytes, the limit`));
        }
        const id = runSseRequestId(body, headers);
        if (!id.ok) return writeStreamError(res, streamType, id.error);
        const admitted = deps.streams.admit();
        if (!admitted.ok) return writeStreamError(res, streamType, admitted.error);
        return serveRunSse(req, res, id.requestId, headers, runSseFrames, deps.logger, admitted.cut).finally(admitted.release);
      },
      (err: unknown) => {
        deps.logger.debug({ err }, "RunSSE body could not be read");
        res.destroy();
      },
    );
  };
}
