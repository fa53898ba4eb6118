import type { IncomingMessage, ServerResponse } from "node:http";
import { CompatError } from "./errors.js";

/** Reads a JSON request body of at most `limit` bytes. */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const type = req.headers["content-type"] ?? "";
  if (!/^application\/json\b/i.test(type)) throw new CompatError("invalid_request", "The request body must be JSON (content-type: application/json).");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > limit) throw new CompatError("too_large", `The request body is larger than ${limit} bytes (GATEWAY_MAX_PAYLOAD_BYTES).`);
    chunks.push(b);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    throw new CompatError("invalid_request", "The request body is not valid JSON.");
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...headers }).end(text);
}

/**
 * A server-sent event stream. Headers go out with the first event, so everything that fails
 * before it can still be answered with an HTTP error status.
 */
export class SseWriter {
  private opened = false;
  /** When the first event was written (`performance.now()`). */
  private openedAt: number | undefined;
  constructor(
    private readonly res: ServerResponse,
    private readonly headers: Record<string, string> = {},
  ) {}

  get started(): boolean {
    return this.opened;
  }

  get startedAt(): number | undefined {
    return this.openedAt;
  }

  /** `event` names the SSE event (Anthropic, Responses); Chat Completions sends data lines only. */
  send(data: unknown, event?: string): void {
    if (!this.opened) {
      this.res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...this.headers });
      this.opened = true;
    }
    const payload = typeof data === "string" ? data : JSON.stringify(data);
    this.res.write(`${event ? `event: ${event}\n` : ""}data: ${payload}\n\n`);
    this.openedAt ??= performance.now();
  }

  end(): void {
    if (!this.opened) this.res.writeHead(200, { "content-type": "text/event-stream", ...this.headers });
    this.res.end();
  }
}
