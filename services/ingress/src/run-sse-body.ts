import type { IncomingMessage, ServerResponse } from "node:http";
import { fromBinary } from "@bufbuild/protobuf";
import { BidiRequestIdSchema } from "@byok/wire";

/** A RunSSE request body is one envelope with a small BidiRequestId; anything larger is refused. */
const MAX_RUN_SSE_BODY = 64 * 1024;

/**
 * Checks that a RunSSE body is exactly one Connect envelope holding an agent.v1.BidiRequestId
 * with a request id, so a malformed body gets `invalid_argument` with a message a person can act
 * on (Connect alone answers some of these `internal` or `resource_exhausted`). Returns the body
 * bytes, or the reason it is refused. Compressed envelopes are left for Connect to decode.
 */
export function checkRunSseBody(body: Buffer): { ok: true } | { ok: false; reason: string } {
  const expect = "a RunSSE body must be one Connect envelope ([flags:u8][length:u32 BE][payload]) holding an agent.v1.BidiRequestId";
  if (body.length < 5) return { ok: false, reason: `${expect}; got ${body.length} bytes` };
  const flags = body[0]!;
  const len = body.readUInt32BE(1);
  if (len !== body.length - 5) {
    return { ok: false, reason: `${expect}; the envelope announces ${len} payload bytes but ${body.length - 5} were sent` };
  }
  if (flags & 0x01) return { ok: true };
  if (flags !== 0) return { ok: false, reason: `${expect}; unexpected envelope flags 0x${flags.toString(16)}` };
  try {
    const id = fromBinary(BidiRequestIdSchema, body.subarray(5));
    if (!id.requestId) return { ok: false, reason: "the RunSSE BidiRequestId has an empty request_id" };
  } catch (err) {
    return { ok: false, reason: `${expect}; the payload does not decode: ${(err as Error).message}` };
  }
  return { ok: true };
}

/** Reads the whole (small) body; undefined when it exceeds the limit. */
export async function readSmallBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_RUN_SSE_BODY) return undefined;
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

/** Answers like a Connect server stream that ends at once with `invalid_argument`. */
export function writeStreamError(res: ServerResponse, contentType: string, message: string): void {
  const json = Buffer.from(JSON.stringify({ error: { code: "invalid_argument", message } }));
  const header = Buffer.alloc(5);
  header[0] = 0x02;
  header.writeUInt32BE(json.length, 1);
  res.writeHead(200, { "content-type": contentType, "cache-control": "no-cache" });
  res.end(Buffer.concat([header, json]));
}
