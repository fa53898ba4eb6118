import type { IncomingMessage, ServerResponse } from "node:http";
import { gunzipSync } from "node:zlib";
import { fromBinary } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { endStreamToJson } from "@connectrpc/connect/protocol-connect";
import { BidiRequestIdSchema, encodeEnvelope, ENVELOPE_FLAG_COMPRESSED, ENVELOPE_FLAG_END_STREAM, ENVELOPE_HEADER_BYTES } from "@byok/wire";
import { invalidArgument, resourceExhausted } from "./errors.js";

/** A RunSSE request body is one envelope with a small BidiRequestId; anything larger is refused. */
export const MAX_RUN_SSE_BODY = 64 * 1024;

const EXPECT = "a RunSSE body must be one Connect envelope ([flags:u8][length:u32 BE][payload]) holding an agent.v1.BidiRequestId";

/**
 * Reads the request id of a RunSSE body: exactly one Connect envelope (gzip-compressed only when
 * `connect-content-encoding: gzip` says so) holding an agent.v1.BidiRequestId with a request id.
 * Every other body is refused with a ConnectError a person can act on (Connect alone answers
 * some of these `internal`), which the stream ends with.
 */
export function runSseRequestId(body: Buffer, headers: Headers): { ok: true; requestId: string } | { ok: false; error: ConnectError } {
  const refuse = (reason: string) => ({ ok: false as const, error: invalidArgument(reason) });
  if (body.length < ENVELOPE_HEADER_BYTES) return refuse(`${EXPECT}; got ${body.length} bytes`);
  const flags = body[0]!;
  const len = body.readUInt32BE(1);
  if (len !== body.length - ENVELOPE_HEADER_BYTES) {
    return refuse(`${EXPECT}; the envelope announces ${len} payload bytes but ${body.length - ENVELOPE_HEADER_BYTES} were sent`);
  }
  if (flags & ~ENVELOPE_FLAG_COMPRESSED) return refuse(`${EXPECT}; unexpected envelope flags 0x${flags.toString(16)}`);
  let payload: Uint8Array = body.subarray(ENVELOPE_HEADER_BYTES);
  if (flags & ENVELOPE_FLAG_COMPRESSED) {
    const encoding = headers.get("connect-content-encoding");
    if (encoding !== "gzip") return refuse("a compressed RunSSE body needs connect-content-encoding: gzip");
    try {
      payload = gunzipSync(payload, { maxOutputLength: MAX_RUN_SSE_BODY });
    } catch (err) {
      if ((err as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
        return { ok: false, error: resourceExhausted(`the RunSSE body decompresses to more than ${MAX_RUN_SSE_BODY} bytes, the limit`) };
      }
      return refuse("the RunSSE body is not valid gzip data");
    }
  }
  let requestId: string;
  try {
    requestId = fromBinary(BidiRequestIdSchema, payload).requestId;
  } catch {
    return refuse(`${EXPECT}; the payload is not a valid agent.v1.BidiRequestId`);
  }
  if (!requestId) return refuse("the RunSSE BidiRequestId has an empty request_id");
  return { ok: true, requestId };
}

/** Reads the whole (small) body; undefined when it exceeds the limit. */
export async function readSmallBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const declared = Number(req.headers["content-length"] ?? Number.NaN);
  if (declared > MAX_RUN_SSE_BODY) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_RUN_SSE_BODY) return undefined;
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

/** Answers like a Connect server stream that ends at once with `error` (and its ErrorDetails). */
export function writeStreamError(res: ServerResponse, contentType: string, error: ConnectError): void {
  const end = new TextEncoder().encode(JSON.stringify(endStreamToJson(new Headers(), error, undefined)));
  res.writeHead(200, { "content-type": contentType, "cache-control": "no-cache" });
  res.end(encodeEnvelope(ENVELOPE_FLAG_END_STREAM, end));
}
