import type { IncomingMessage, ServerResponse } from "node:http";
import { Code, ConnectError, createConnectRouter, createContextValues, type ConnectRouter } from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { createAsyncIterable, type UniversalHandler, type UniversalServerRequest, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, errorToJsonBytes, parseContentType } from "@connectrpc/connect/protocol-connect";
import { encodeEnvelope } from "@byok/wire";
import type { Logger } from "@byok/telemetry";
import { authenticateCaller, PRINCIPAL, type Authenticator } from "./auth.js";
import { endStreamFor } from "@byok/protocol";
import { invalidArgument, notFound, resourceExhausted } from "./errors.js";
import { checkedEnvelopes, clip, COMPRESSIONS, decodeMessage, requestCompression } from "./request-messages.js";

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
 * protocol Cursor speaks); gRPC and gRPC-web requests go to connect-node unchanged (their
 * handlers authenticate themselves, see `principalOf`).
 * Returns undefined from `route` for a path that is not a procedure.
 */
export function createConnectEdge(opts: ConnectEdgeOptions): { route(path: string): NodeHandler | undefined } {
  const router = createConnectRouter({ readMaxBytes: opts.readMaxBytes, acceptCompression: COMPRESSIONS });
  opts.routes(router);
  const byPath = new Map<string, NodeHandler>();
  for (const h of router.handlers) {
    const guarded = guardHandler(h, opts);
    byPath.set(h.requestPath, (req, res) => {
      const uReq = universalRequestFromNodeRequest(req, res, undefined, undefined);
      guarded(uReq)
        .then((uRes) => universalResponseToNodeResponse(uRes, res))
        .catch(() => {
          // The client went away mid-response; nothing left to answer.
          res.destroy();
        });
    });
  }
  return { route: (path) => byPath.get(path) };
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
    const encodingHeader = unary ? "content-encoding" : "connect-content-encoding";
    try {
      const compression = requestCompression(req.header, encodingHeader);
      const message = { input: h.method.input, binary: type.binary, compression, readMaxBytes, procedure };
      if (!unary) {
        const body = envelopesOf(checkedEnvelopes(req.body as AsyncIterable<Uint8Array>, message));
        return await h({ ...req, body, contextValues });
      }
      const raw = await readBody(req, readMaxBytes, procedure);
      const { bytes } = await decodeMessage(raw, message);
      // The request's own Headers (built for this request alone, read by nothing else): changed
      // in place rather than copied.
      req.header.delete(encodingHeader);
      req.header.set("content-length", String(bytes.byteLength));
      return await h({ ...req, body: createAsyncIterable([bytes]), contextValues });
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

async function readBody(req: UniversalServerRequest, readMaxBytes: number, procedure: string): Promise<Uint8Array> {
  const tooLarge = (n: string) => resourceExhausted(`The ${procedure} body is ${n} bytes; the limit is ${readMaxBytes} bytes.`);
  const declared = Number(req.header.get("content-length") ?? Number.NaN);
  if (declared > readMaxBytes) throw tooLarge(String(declared));
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of req.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > readMaxBytes) throw tooLarge(`over ${readMaxBytes}`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

