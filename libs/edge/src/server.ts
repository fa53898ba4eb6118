import type { IncomingMessage, ServerResponse } from "node:http";
import { ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import type { Bus, RunDispatcher } from "@byok/bus";
import type { GatewayMetrics, Logger } from "@byok/telemetry";
import { BidiService } from "@byok/wire";
import { authenticateCaller, principalOf, type Authenticator, type Principal } from "./auth.js";
import { createBidiAppendHandler, createClientAppender } from "./bidi-append.js";
import { RUN_PATH, serveRun } from "./run.js";
import type { OpenStreams } from "./open-streams.js";
import { createConnectEdge, streamTypeOf, writeRefusal, writeStreamError, writeUnaryError, writeUnknownProcedure, type NodeHandler } from "./connect-edge.js";
import { createRunSseFrames } from "./run-sse.js";
import { readRunSseRequest } from "./run-sse-request.js";
import { acceptsGzip, headersOf, releaseHeaders, serveRunSse } from "./run-sse-stream.js";
import { readClientHeaders } from "./client-headers.js";
import { invalidArgument, overloaded } from "./errors.js";

export const RUN_SSE_PATH = "/agent.v1.AgentService/RunSSE";
export const BIDI_APPEND_PATH = "/aiserver.v1.BidiService/BidiAppend";

export interface EdgeDeps {
  bus: Bus;
  dispatcher: RunDispatcher;
  auth: Authenticator;
  timers: { heartbeatMs: number; notFoundWaitMs: number; newGenerationWaitMs: number; readerTtlMs: number };
  limits: { maxPayloadBytes: number; readBatchBytes: number };
  logger: Logger;
  metrics: GatewayMetrics;
  /** The replica's open RunSSE streams: the stream limit and the shutdown drain. */
  streams: OpenStreams;
  /** The control plane (@byok/control-plane): its procedures join the router; its other paths come before the 404. */
  controlPlane?: EdgeExtension;
}

/** What the control plane adds to the edge. */
export interface EdgeExtension {
  /** Registers its procedures; `principal` is the call's, authenticated by the edge before the body was read. */
  routes(router: ConnectRouter, principal: (ctx: HandlerContext) => Promise<Principal>): void;
  /** True when it served the request. */
  handle(req: IncomingMessage, res: ServerResponse): boolean;
  /** The tenant's policy enforces privacy mode: its runs are ghost-mode runs whatever the header says. */
  privacyEnforced(tenantId: string): Promise<boolean>;
}

export type { NodeHandler };

/**
 * The Connect edge: BidiAppend (unary, proto + JSON, gzip bodies), RunSSE (server stream) and
 * AgentService/Run (HTTP/2 bidi stream). Works over HTTP/1.1 and HTTP/2 alike. Every route
 * authenticates the caller from the headers before it reads the body. The probe routes are the
 * process's (libs/process).
 */
export function createEdgeHandler(deps: EdgeDeps): NodeHandler {
  const cp = deps.controlPlane;
  const appendDeps = { ...deps, ...(cp ? { privacyEnforced: (tenantId: string) => cp.privacyEnforced(tenantId) } : {}) };
  const connect = createConnectEdge({
    // Hex doubles the payload; leave room for the envelope and the other fields.
    readMaxBytes: deps.limits.maxPayloadBytes * 2 + 64 * 1024,
    auth: deps.auth,
    logger: deps.logger,
    routes(router) {
      router.rpc(BidiService.method.bidiAppend, createBidiAppendHandler(appendDeps));
      cp?.routes(router, (ctx) => principalOf(ctx, deps.auth, deps.logger));
    },
  });
  const output = createRunSseFrames(deps);
  const runDeps = { append: createClientAppender(appendDeps), frames: output, maxMessageBytes: deps.limits.maxPayloadBytes, logger: deps.logger };

  /** The caller, or undefined once refused (`unauthenticated` as the route's protocol answers errors). */
  const authenticated = async (req: IncomingMessage, res: ServerResponse, headers: Headers): Promise<Principal | undefined> => {
    try {
      return await authenticateCaller(deps.auth, headers, deps.logger);
    } catch (err) {
      writeRefusal(req, res, headers, ConnectError.from(err));
      return undefined;
    }
  };

  const serveRunRoute = async (req: IncomingMessage, res: ServerResponse) => {
    const headers = headersOf(req);
    const principal = await authenticated(req, res, headers);
    if (!principal) return;
    const refuse = (status: number, message: string) => {
      req.resume();
      writeUnaryError(res, status, invalidArgument(message));
    };
    if (req.httpVersionMajor !== 2) return refuse(505, "agent.v1.AgentService/Run is a bidirectional stream and needs HTTP/2; over HTTP/1.1 use RunSSE + BidiAppend.");
    if (req.method !== "POST") return refuse(405, `agent.v1.AgentService/Run takes POST, not ${req.method}.`);
    const contentType = headers.get("content-type") ?? "";
    if (!/^application\/connect\+proto\s*(;|$)/i.test(contentType)) {
      return refuse(415, `agent.v1.AgentService/Run takes content-type application/connect+proto (a Connect bidi stream); got ${contentType ? `'${contentType.slice(0, 80)}'` : "none"}.`);
    }
    const admitted = deps.streams.admit();
    if (!admitted.ok) return writeStreamError(res, "application/connect+proto", admitted.error);
    await serveRun(req, res, principal, headers, runDeps, admitted);
  };

  // RunSSE is served here rather than by connect-node: stored frames are forwarded as they
  // are (no decode and re-encode per frame), in Connect's streaming format.
  const serveRunSseRoute = async (req: IncomingMessage, res: ServerResponse) => {
    const headers = headersOf(req);
    const principal = await authenticated(req, res, headers);
    if (!principal) return;
    if (req.method !== "POST") {
      req.resume();
      return writeUnaryError(res, 405, invalidArgument(`agent.v1.AgentService/RunSSE takes POST, not ${req.method}.`));
    }
    const contentType = headers.get("content-type") ?? "";
    if (!/^application\/connect\+proto\s*(;|$)/i.test(contentType)) {
      req.resume();
      return writeUnaryError(res, 415, invalidArgument(
        `agent.v1.AgentService/RunSSE takes content-type application/connect+proto (a Connect server stream); got ${contentType ? `'${contentType.slice(0, 80)}'` : "none"}.`,
      ));
    }
    let requestId: string;
    try {
      // Not destroyed on return: a plain `for await` over the request leaves its five
      // listeners (and their closures) on it for the stream's whole life.
      requestId = await readRunSseRequest(req.iterator({ destroyOnReturn: false }), headers);
    } catch (err) {
      if (!(err instanceof ConnectError)) throw err;
      req.resume();
      return writeStreamError(res, streamTypeOf(headers), err);
    }
    const admitted = deps.streams.admit();
    if (!admitted.ok) return writeStreamError(res, streamTypeOf(headers), admitted.error);
    const stream = { principal, requestId, client: readClientHeaders(headers), gzip: acceptsGzip(headers), frames: output };
    // Everything the stream needs of the headers is read: the request lets them go.
    releaseHeaders(req);
    // Sets the stream up and returns: nothing of this function (the request's Headers with it)
    // is held while the stream waits; serveRunSse releases the admission when it ends.
    serveRunSse(res, stream, deps.logger, admitted);
  };

  const served = (route: (req: IncomingMessage, res: ServerResponse) => Promise<void>, name: string): NodeHandler => (req, res) => {
    route(req, res).catch((err: unknown) => {
      // The request body failed (the client went away): nothing left to answer.
      deps.logger.debug({ err }, `${name} ended early`);
      res.destroy();
    });
  };
  const runRoute = served(serveRunRoute, "AgentService/Run");
  const runSseRoute = served(serveRunSseRoute, "RunSSE");

  return (req, res) => {
    const path = (req.url ?? "").split("?")[0] ?? "";
    if (path === RUN_PATH) return runRoute(req, res);
    if (path === RUN_SSE_PATH) return runSseRoute(req, res);
    const procedure = connect.route(path);
    if (procedure) procedure(req, res);
    else if (!deps.controlPlane?.handle(req, res)) writeUnknownProcedure(res, path);
  };
}

/**
 * How every request on a connection past GATEWAY_MAX_CONNECTIONS is answered (the listener
 * closes the connection after it): `resource_exhausted`, retryable, `retry-after: 1`, as the
 * route's protocol answers errors; the body is not read.
 */
export function createConnectionRefusal(maxConnections: number): NodeHandler {
  const error = overloaded(
    `This gateway replica already holds ${maxConnections} connections (GATEWAY_MAX_CONNECTIONS); retry shortly or on another replica.`,
  );
  return (req, res) => {
    res.setHeader("retry-after", String(CONNECTION_RETRY_AFTER_S));
    writeRefusal(req, res, headersOf(req), error);
  };
}

/** The `retry-after` (seconds) of a request refused past the connection limit. */
const CONNECTION_RETRY_AFTER_S = 1;
