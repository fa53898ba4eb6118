import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";

/** A request of node:http or node:http2 (compatibility API): the edge serves both. */
export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = ServerResponse | Http2ServerResponse;

/** Reads a small request body; rejects past `max` bytes. */
export async function readSmall(req: NodeRequest, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > max) throw new BodyTooLarge(max);
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

export class BodyTooLarge extends Error {
  constructor(readonly max: number) {
    super(`the request body is over the gateway's limit of ${max} bytes`);
    this.name = "BodyTooLarge";
  }
}

/** Writes a whole response; the HTTP/1.1 and HTTP/2 compatibility responses take the same call. */
export function respond(res: NodeResponse, status: number, headers: Record<string, string>, body?: string | Uint8Array): void {
  (res as ServerResponse).writeHead(status, headers);
  (res as ServerResponse).end(body);
}

export function sendJson(res: NodeResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  respond(res, status, { "content-type": "application/json", "cache-control": "no-store", ...headers }, JSON.stringify(body));
}

/** The request's headers as fetch Headers (HTTP/2 pseudo-headers left out). */
export function headersOf(req: NodeRequest): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || k.startsWith(":")) continue;
    h.set(k, Array.isArray(v) ? v.join(", ") : v);
  }
  return h;
}
