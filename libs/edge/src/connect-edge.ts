import type { IncomingMessage, ServerResponse } from "node:http";
import { toBinary, toJsonString } from "@bufbuild/protobuf";
import {
  Code, ConnectError, createConnectRouter, createContextValues, createHandlerContext, createMethodImplSpec, createServiceImplSpec,
  type ConnectRouter, type MethodImplSpec,
} from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import {
  compressionNegotiate, createAsyncIterable, createMethodUrl, invokeUnaryImplementation, mergeNonProtocolHeaders,
  type UniversalHandler, type UniversalServerRequest, type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus, contentTypeUnaryJson, contentTypeUnaryProto, errorToJsonBytes, headerTimeout, headerUnaryAcceptEncoding, parseContentType,
  parseTimeout, trailerMux,
} from "@connectrpc/connect/protocol-connect";
import { encodeEnvelope } from "@byok/wire";
import type { Logger } from "@byok/telemetry";
import { authenticateCaller, PRINCIPAL, type Authenticator } from "./auth.js";
import { endStreamFor } from "@byok/protocol";
import { invalidArgument, notFound, resourceExhausted } from "./errors.js";
import { checkedEnvelopes, clip, COMPRESSIONS, decodeMessage, requestCompression } from "./request-messages.js";
import { headersOf } from "./run-sse-stream.js";

export type NodeHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface ConnectEdgeOptions {
  /** Registers the procedures (router.rpc / router.service); every one is guarded. */
  routes(router: ConnectRouter): void;
  /** Largest request body (unary) or message (streams) accepted, before and after decompression. */
  readMaxBytes: number;
  /** Every Connect-protocol call is authenticated before its body is read; handlers find the principal under PRINCIPAL. */
  auth: Authenticator;
  logger: Logger;
}

/**
 * The Connect procedures of the edge, each behind one input guard: the caller is authenticated
 * first (headers only: a bad body from an unknown caller is `unauthenticated`, and nothing of
 * it is read), then whatever it sends ends as a 4xx Connect error carrying
 * aiserver.v1.ErrorDetails with a message a person can act on — `invalid_argument` for a body
 * that does not decode, a clear error for a wrong content type or encoding,
 * `resource_exhausted` past the size limit — never connect-node's `internal` (HTTP 500) and
 * never a library's own wording. Requests in the Connect protocol are checked here (the
 * protocol Cursor speaks): a unary call (POST, a unary content type) is answered by
 * `serveUnary`, anything else by connect-node behind `guardHandler`; gRPC and gRPC-web requests
 * go to connect-node unchanged (their handlers authenticate themselves, see `principalOf`).
 * Returns undefined from `route` for a path that is not a procedure.
 */
export function createConnectEdge(opts: ConnectEdgeOptions): { route(path: string): NodeHandler | undefined } {
  const router = createConnectRouter({ readMaxBytes: opts.readMaxBytes, acceptCompression: COMPRESSIONS });
  const unary = new Map<string, UnarySpec>();
  opts.routes(recordingUnary(router, unary));
  const byPath = new Map<string, NodeHandler>();
  for (const h of router.handlers) {
    const guarded = guardHandler(h, opts);
    const universal: NodeHandler = (req, res) => {
      const uReq = universalRequestFromNodeRequest(req, res, undefined, undefined);
      respond(guarded(uReq), res);
    };
    const spec = unary.get(h.requestPath);
    byPath.set(h.requestPath, spec === undefined ? universal : (req, res) => {
      // The Connect unary call as Cursor makes it (POST, application/proto or /json) is served
      // directly; anything else (gRPC, GET, a wrong content type) takes connect-node's way.
      const type = req.method === "POST" ? parseContentType(req.headers["content-type"] ?? null) : undefined;
      if (type === undefined || type.stream) return universal(req, res);
      serveUnary(spec, type.binary, req, res, opts).catch(() => res.destroy());
    });
  }
  return { route: (path) => byPath.get(path) };
}

function respond(uRes: Promise<UniversalServerResponse>, res: ServerResponse): void {
  uRes
    .then((r) => universalResponseToNodeResponse(r, res))
    .catch(() => {
      // The client went away mid-response; nothing left to answer.
      res.destroy();
    });
}

type UnarySpec = MethodImplSpec & { kind: "unary" };

/**
 * The router as `routes` sees it: registers with connect-node as before, and keeps each unary
 * procedure's implementation (connect's own spec: bound, `unimplemented` for a missing method)
 * for the direct path.
 */
function recordingUnary(router: ConnectRouter, into: Map<string, UnarySpec>): ConnectRouter {
  const keep = (spec: MethodImplSpec) => {
    if (spec.kind === "unary") into.set(createMethodUrl("/", spec.method), spec);
  };
  const recording: ConnectRouter = {
    get handlers() {
      return router.handlers;
    },
    service(service, implementation, options) {
      router.service(service, implementation, options);
      for (const spec of Object.values(createServiceImplSpec(service, implementation).methods)) keep(spec);
      return recording;
    },
    rpc(method, impl, options) {
      router.rpc(method, impl, options);
      keep(createMethodImplSpec(method, impl) as MethodImplSpec);
      return recording;
    },
  };
  return recording;
}

/** The reason a finished call's signal carries: a fixed value, so ending a call builds no DOMException (and its stack). */
const CALL_ENDED = new ConnectError("the call ended", Code.Canceled);

/** Responses at least this large are compressed when the client accepts it (connect-node's default). */
const COMPRESS_MIN_BYTES = 1024;

/**
 * One Connect unary call, answered as connect-node's Connect handler answers it (its own
 * pieces: the handler context, timeout parsing, compression negotiation, error JSON, trailers
 * as `trailer-` headers) but without its adapters between Node's request and its universal one,
 * and with the message decoded once: the guard's checks in the guard's order and words.
 * docs/benchmarks.md, "Unary calls without connect-node's adapters".
 */
async function serveUnary(spec: UnarySpec, binary: boolean, req: IncomingMessage, res: ServerResponse, opts: ConnectEdgeOptions): Promise<void> {
  const header = headersOf(req);
  let principal;
  try {
    principal = await authenticateCaller(opts.auth, header, opts.logger);
  } catch (err) {
    const e = ConnectError.from(err);
    return respond(Promise.resolve(unaryError(codeToHttpStatus(e.code), e)), res);
  }
  const procedure = `${spec.method.parent.typeName}/${spec.method.name}`;
  const timeout = parseTimeout(header.get(headerTimeout), Number.MAX_SAFE_INTEGER);
  // The call's signal fires when the client goes away before its answer.
  const gone = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) gone.abort(new ConnectError("the client went away", Code.Canceled));
  };
  res.once("close", onClose);
  const context = createHandlerContext({
    service: spec.method.parent,
    method: spec.method,
    protocolName: "connect",
    requestMethod: "POST",
    url: `http://${req.headers.host ?? "localhost"}${req.url ?? ""}`,
    timeoutMs: timeout.timeoutMs,
    requestSignal: gone.signal,
    requestHeader: header,
    responseHeader: { "content-type": binary ? contentTypeUnaryProto : contentTypeUnaryJson },
    contextValues: createContextValues().set(PRINCIPAL, principal),
  });
  const responseCompression = compressionNegotiate(COMPRESSIONS, null, header.get(headerUnaryAcceptEncoding), headerUnaryAcceptEncoding).response;
  let status = 200;
  let body: Uint8Array;
  try {
    if (timeout.error) throw timeout.error;
    const compression = requestCompression(header, "content-encoding");
    const raw = await readNodeBody(req, header, opts.readMaxBytes, procedure);
    const { message } = await decodeMessage(raw, { input: spec.method.input, binary, compression, readMaxBytes: opts.readMaxBytes, procedure });
    const output = await invokeUnaryImplementation(spec, context, message, []);
    body = binary ? toBinary(spec.method.output, output) : new TextEncoder().encode(toJsonString(spec.method.output, output));
  } catch (e) {
    const error = e instanceof ConnectError ? e : new ConnectError("internal error", Code.Internal, undefined, undefined, e);
    status = codeToHttpStatus(error.code);
    context.responseHeader.set("content-type", contentTypeUnaryJson);
    if (!error.isWireError) mergeNonProtocolHeaders(context.responseHeader, error.metadata);
    body = errorToJsonBytes(error, {});
  } finally {
    context.abort(CALL_ENDED);
    res.off("close", onClose);
  }
  if (responseCompression && body.byteLength >= COMPRESS_MIN_BYTES) {
    body = await responseCompression.compress(body);
    context.responseHeader.set("content-encoding", responseCompression.name);
  }
  const answer = trailerMux(context.responseHeader, context.responseTrailer);
  answer.set("content-length", String(body.byteLength));
  if (req.readableEnded) {
    // The whole body was read: the answer is written as it is.
    const nodeHeaders: Record<string, string> = {};
    answer.forEach((value, name) => (nodeHeaders[name] = value));
    res.writeHead(status, nodeHeaders).end(body);
  } else {
    // Answered before the body was read (a refusal): connect-node's writer drains or resets the rest.
    respond(Promise.resolve({ status, header: answer, body: createAsyncIterable([body]) }), res);
  }
}

/**
 * A unary request's body from Node's request, refused past `readMaxBytes` (declared or read);
 * reading stops there and the rest is left to the response writer.
 */
function readNodeBody(req: IncomingMessage, header: Headers, readMaxBytes: number, procedure: string): Promise<Uint8Array> {
  const tooLarge = (n: string) => resourceExhausted(`The ${procedure} body is ${n} bytes; the limit is ${readMaxBytes} bytes.`);
  const declared = Number(header.get("content-length") ?? Number.NaN);
  if (declared > readMaxBytes) return Promise.reject(tooLarge(String(declared)));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err?: unknown) => {
      req.off("data", onData).off("end", onEnd).off("error", done).off("close", onClose);
      if (err === undefined) resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
      else reject(err);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > readMaxBytes) {
        req.pause();
        return done(tooLarge(`over ${readMaxBytes}`));
      }
      chunks.push(chunk);
    };
    const onEnd = () => done();
    // Closed before its end: the client went away (an "error" may or may not come first).
    const onClose = () => done(new ConnectError("the client went away", Code.Canceled));
    req.on("data", onData).once("end", onEnd).once("error", done).once("close", onClose);
  });
}

/** A Connect unary error response for a path that names no procedure. */
export function writeUnknownProcedure(res: ServerResponse, path: string): void {
  writeUnaryError(res, 404, notFound(`${path} is not a procedure this gateway serves.`));
}

export function writeUnaryError(res: ServerResponse, status: number, err: ConnectError): void {
  res.writeHead(status, { "content-type": "application/json" }).end(errorToJsonBytes(err, {}));
}

/**
 * Answers a refusal decided from the headers alone (authentication, a connection past the
 * limit) as the route's protocol answers errors: a Connect stream (`application/connect+…`)
 * ends at once with it, anything else gets the unary JSON error with its HTTP status. The body
 * is not read.
 */
export function writeRefusal(req: IncomingMessage, res: ServerResponse, headers: Headers, err: ConnectError): void {
  req.resume();
  if (/^application\/connect\+/i.test(headers.get("content-type") ?? "")) writeStreamError(res, streamTypeOf(headers), err);
  else writeUnaryError(res, codeToHttpStatus(err.code), err);
}

/** The content type of a stream's response: `text/event-stream` for Cursor's RunSSE, else Connect's own. */
export function streamTypeOf(headers: Headers): string {
  return headers.get("x-cursor-streaming") === "true" ? "text/event-stream" : "application/connect+proto";
}

/** Answers like a Connect stream that ends at once with `error` (HTTP 200 + end-stream). */
export function writeStreamError(res: ServerResponse, contentType: string, error: ConnectError): void {
  res.writeHead(200, { "content-type": contentType, "cache-control": "no-cache" });
  res.end(endStreamFor(error));
}

function unaryError(status: number, err: ConnectError): UniversalServerResponse {
  return { status, header: new Headers({ "content-type": "application/json" }), body: createAsyncIterable([errorToJsonBytes(err, {})]) };
}

function guardHandler(h: UniversalHandler, opts: ConnectEdgeOptions): (req: UniversalServerRequest) => Promise<UniversalServerResponse> {
  const procedure = `${h.service.typeName}/${h.method.name}`;
  const unary = h.method.methodKind === "unary";
  const { readMaxBytes } = opts;
  return async (req) => {
    const contentType = req.header.get("content-type") ?? "";
    // gRPC and gRPC-web frame errors in trailers (HTTP 200); connect-node answers them.
    if (/^application\/grpc/i.test(contentType)) return h(req);
    const type = parseContentType(contentType);
    let principal;
    try {
      principal = await authenticateCaller(opts.auth, req.header, opts.logger);
    } catch (err) {
      const e = ConnectError.from(err);
      if (type?.stream && !unary) {
        return { status: 200, header: new Headers({ "content-type": contentType }), body: createAsyncIterable([endStreamFor(e)]) };
      }
      return unaryError(codeToHttpStatus(e.code), e);
    }
    const contextValues = createContextValues().set(PRINCIPAL, principal);
    if (!h.allowedMethods.includes(req.method)) {
      return unaryError(405, invalidArgument(`${procedure} takes ${h.allowedMethods.join(" or ")}, not ${req.method}.`));
    }
    if (type === undefined || type.stream === unary) {
      const expected = unary ? "application/proto or application/json" : "application/connect+proto or application/connect+json";
      return unaryError(415, invalidArgument(`${procedure} takes content-type ${expected} (Connect protocol); got ${contentType ? `'${clip(contentType)}'` : "none"}.`));
    }
    if (unary) {
      // Never here: a POST with a unary content type is answered by serveUnary (createConnectEdge).
      throw new Error(`${procedure}: a Connect unary call reached connect-node's path`);
    }
    try {
      const compression = requestCompression(req.header, "connect-content-encoding");
      const message = { input: h.method.input, binary: type.binary, compression, readMaxBytes, procedure };
      const body = envelopesOf(checkedEnvelopes(req.body as AsyncIterable<Uint8Array>, message));
      return await h({ ...req, body, contextValues });
    } catch (err) {
      if (!(err instanceof ConnectError)) throw err;
      return unaryError(err.code === Code.ResourceExhausted ? 429 : 400, err);
    }
  };
}

/** The checked messages as uncompressed envelopes again, for connect-node to parse. */
async function* envelopesOf(messages: AsyncIterable<{ bytes: Uint8Array }>): AsyncGenerator<Uint8Array> {
  for await (const m of messages) yield encodeEnvelope(0, m.bytes);
}


