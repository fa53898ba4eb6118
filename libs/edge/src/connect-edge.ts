import type { IncomingMessage, ServerResponse } from "node:http";
import { fromBinary, fromJsonString, type DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError, createConnectRouter, type ConnectRouter } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import {
  createAsyncIterable,
  type Compression,
  type UniversalHandler,
  type UniversalServerRequest,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import { errorToJsonBytes, parseContentType } from "@connectrpc/connect/protocol-connect";
import { ENVELOPE_FLAG_COMPRESSED, ENVELOPE_HEADER_BYTES, encodeEnvelope } from "@byok/wire";
import { invalidArgument, notFound, resourceExhausted } from "./errors.js";

export type NodeHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface ConnectEdgeOptions {
  /** Registers the procedures (router.rpc / router.service); every one is guarded. */
  routes(router: ConnectRouter): void;
  /** Largest request body (unary) or message (streams) accepted, before and after decompression. */
  readMaxBytes: number;
}

const COMPRESSIONS: Compression[] = [compressionGzip, compressionBrotli];

/**
 * The Connect procedures of the edge, each behind one input guard: whatever a client sends ends
 * as a 4xx Connect error carrying aiserver.v1.ErrorDetails with a message a person can act on —
 * `invalid_argument` for a body that does not decode, a clear error for a wrong content type or
 * encoding, `resource_exhausted` past the size limit — never connect-node's `internal` (HTTP 500)
 * and never a library's own wording. Requests in the Connect protocol are checked here (the
 * protocol Cursor speaks); gRPC and gRPC-web requests go to connect-node unchanged.
 * Returns undefined from `route` for a path that is not a procedure.
 */
export function createConnectEdge(opts: ConnectEdgeOptions): { route(path: string): NodeHandler | undefined } {
  const router = createConnectRouter({ readMaxBytes: opts.readMaxBytes, acceptCompression: COMPRESSIONS });
  opts.routes(router);
  const byPath = new Map<string, NodeHandler>();
  for (const h of router.handlers) {
    const guarded = guardHandler(h, opts.readMaxBytes);
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

function unaryError(status: number, err: ConnectError): UniversalServerResponse {
  return { status, header: new Headers({ "content-type": "application/json" }), body: createAsyncIterable([errorToJsonBytes(err, {})]) };
}

function guardHandler(h: UniversalHandler, readMaxBytes: number): (req: UniversalServerRequest) => Promise<UniversalServerResponse> {
  const procedure = `${h.service.typeName}/${h.method.name}`;
  const unary = h.method.methodKind === "unary";
  return async (req) => {
    const contentType = req.header.get("content-type") ?? "";
    // gRPC and gRPC-web frame errors in trailers (HTTP 200); connect-node answers them.
    if (/^application\/grpc/i.test(contentType)) return h(req);
    if (!h.allowedMethods.includes(req.method)) {
      return unaryError(405, invalidArgument(`${procedure} takes ${h.allowedMethods.join(" or ")}, not ${req.method}.`));
    }
    const type = parseContentType(contentType);
    if (type === undefined || type.stream === unary) {
      const expected = unary ? "application/proto or application/json" : "application/connect+proto or application/connect+json";
      return unaryError(415, invalidArgument(`${procedure} takes content-type ${expected} (Connect protocol); got ${contentType ? `'${clip(contentType)}'` : "none"}.`));
    }
    const encodingHeader = unary ? "content-encoding" : "connect-content-encoding";
    const encoding = req.header.get(encodingHeader)?.trim().toLowerCase() ?? "identity";
    const compression = encoding === "identity" ? undefined : COMPRESSIONS.find((c) => c.name === encoding);
    if (encoding !== "identity" && !compression) {
      return unaryError(400, invalidArgument(`${encodingHeader} '${clip(encoding)}' is not supported; send gzip, br or an uncompressed body.`));
    }
    const message = { input: h.method.input, binary: type.binary, compression, readMaxBytes, procedure };
    if (!unary) {
      return h({ ...req, body: checkedEnvelopes(req.body as AsyncIterable<Uint8Array>, message) });
    }
    try {
      const raw = await readBody(req, readMaxBytes, procedure);
      const body = await decodeMessage(raw, message);
      const header = new Headers(req.header);
      header.delete(encodingHeader);
      header.set("content-length", String(body.byteLength));
      return await h({ ...req, header, body: createAsyncIterable([body]) });
    } catch (err) {
      if (!(err instanceof ConnectError)) throw err;
      return unaryError(err.code === Code.ResourceExhausted ? 429 : 400, err);
    }
  };
}

interface MessageRules {
  input: DescMessage;
  binary: boolean;
  compression: Compression | undefined;
  readMaxBytes: number;
  procedure: string;
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

/** Decompresses (bounded) and decodes one message; returns the decompressed bytes that decoded. */
async function decodeMessage(raw: Uint8Array, m: MessageRules): Promise<Uint8Array> {
  let bytes = raw;
  if (m.compression) {
    try {
      bytes = await m.compression.decompress(raw, m.readMaxBytes);
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.ResourceExhausted) {
        throw resourceExhausted(`The ${m.procedure} message decompresses to more than ${m.readMaxBytes} bytes, the limit.`);
      }
      throw invalidArgument(`The ${m.procedure} message is not valid ${m.compression.name} data.`);
    }
  }
  if (bytes.byteLength > m.readMaxBytes) {
    throw resourceExhausted(`The ${m.procedure} message is ${bytes.byteLength} bytes; the limit is ${m.readMaxBytes} bytes.`);
  }
  if (m.binary) {
    try {
      fromBinary(m.input, bytes);
    } catch {
      throw invalidArgument(`The ${m.procedure} message is not a valid ${m.input.typeName} in binary protobuf encoding.`);
    }
  } else {
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      throw invalidArgument(`The ${m.procedure} message is not UTF-8 JSON.`);
    }
    try {
      fromJsonString(m.input, text, { ignoreUnknownFields: true });
    } catch (err) {
      throw invalidArgument(`The ${m.procedure} message is not a valid ${m.input.typeName} in JSON${jsonProblem(err, text)}.`);
    }
  }
  return bytes;
}

/** Which field is wrong, in the protocol's names (never the decoder's own wording). */
function jsonProblem(err: unknown, text: string): string {
  try {
    JSON.parse(text);
  } catch {
    return ": the body is not JSON";
  }
  const field = /cannot decode field ([\w.]+) from JSON/.exec(String((err as Error).message))?.[1];
  return field ? `: field ${field.split(".").pop()} has a value of the wrong type` : "";
}

/**
 * A streaming request body checked envelope by envelope before connect-node parses it: flags,
 * lengths, decompression and decoding, each failure a ConnectError the stream ends with.
 * Yields the same envelopes, decompressed.
 */
async function* checkedEnvelopes(body: AsyncIterable<Uint8Array>, m: MessageRules): AsyncGenerator<Uint8Array> {
  let buf: Buffer = Buffer.alloc(0);
  for await (const chunk of body) {
    buf = buf.byteLength === 0 ? Buffer.from(chunk) : Buffer.concat([buf, chunk]);
    while (buf.byteLength >= ENVELOPE_HEADER_BYTES) {
      const flags = buf[0]!;
      const len = buf.readUInt32BE(1);
      if (flags & ~ENVELOPE_FLAG_COMPRESSED) {
        throw invalidArgument(`A ${m.procedure} request envelope has flags 0x${flags.toString(16)}; a client sends only 0x00 or 0x01 (compressed).`);
      }
      if (len > m.readMaxBytes) {
        throw resourceExhausted(`A ${m.procedure} request message is ${len} bytes; the limit is ${m.readMaxBytes} bytes.`);
      }
      if (buf.byteLength < ENVELOPE_HEADER_BYTES + len) break;
      const payload = buf.subarray(ENVELOPE_HEADER_BYTES, ENVELOPE_HEADER_BYTES + len);
      buf = buf.subarray(ENVELOPE_HEADER_BYTES + len);
      if (flags & ENVELOPE_FLAG_COMPRESSED && !m.compression) {
        throw invalidArgument(`A compressed ${m.procedure} request envelope needs connect-content-encoding gzip or br.`);
      }
      yield encodeEnvelope(0, await decodeMessage(payload, flags & ENVELOPE_FLAG_COMPRESSED ? m : { ...m, compression: undefined }));
    }
  }
  if (buf.byteLength > 0) {
    throw invalidArgument(`The ${m.procedure} request stream ended inside an envelope (${buf.byteLength} bytes left over).`);
  }
}

function clip(s: string): string {
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
}
