/** Minimal JSON-over-node:http plumbing for the admin API: typed errors, body reading, replies. */
import type { IncomingMessage, ServerResponse } from "node:http";

/** An expected failure with its HTTP status; `message` is safe to return to the caller. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "HttpError";
  }
}

const MAX_BODY_BYTES = 1024 * 1024;

export async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, "request body too large");
    chunks.push(b);
  }
  if (size === 0) return {};
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    // JSON.parse messages quote the body, which may hold a secret: never echo them.
    throw new HttpError(400, "request body is not valid JSON");
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), "cache-control": "no-store" });
  res.end(text);
}

export function sendText(res: ServerResponse, status: number, contentType: string, text: string): void {
  res.writeHead(status, { "content-type": contentType, "content-length": Buffer.byteLength(text), "cache-control": "no-store" });
  res.end(text);
}
