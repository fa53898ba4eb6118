import type { IncomingMessage, ServerResponse } from "node:http";
import { gzipSync } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import { endStreamToJson } from "@connectrpc/connect/protocol-connect";
import { encodeEnvelope, ENVELOPE_FLAG_COMPRESSED, ENVELOPE_FLAG_END_STREAM } from "@byok/wire";
import type { Logger } from "@byok/telemetry";

/** Frames at least this large are gzip-compressed when the client accepts it (as connect-node does). */
const COMPRESS_MIN_BYTES = 1024;

/**
 * Writes a RunSSE response as a Connect server stream without decoding the stored frames:
 * each stored AgentServerMessage goes out as its own envelope (gzip-compressed per envelope
 * only when `connect-accept-encoding` allows it), then the end-stream JSON — `{}` or the error
 * with its `aiserver.v1.ErrorDetails` — over HTTP 200, never HTTP-compressed. The content type
 * is `text/event-stream` for Cursor (`x-cursor-streaming: true`), else Connect's own.
 */
export async function serveRunSse(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  headers: Headers,
  frames: (requestId: string, headers: Headers, signal: AbortSignal) => AsyncGenerator<Uint8Array>,
  logger: Logger,
): Promise<void> {
  const gzip = /\bgzip\b/.test(headers.get("connect-accept-encoding") ?? "");
  const abort = new AbortController();
  res.on("close", () => abort.abort());
  res.writeHead(200, {
    "content-type": headers.get("x-cursor-streaming") === "true" ? "text/event-stream" : "application/connect+proto",
    "cache-control": "no-cache",
    ...(gzip ? { "connect-content-encoding": "gzip" } : {}),
  });
  // Node holds the head until the first body write; before the run exists that would be the
  // first heartbeat, seconds later, and a client that awaits the head before its first
  // BidiAppend (docs/architecture.md, "Generations and the append gate") would lose that time every turn.
  res.flushHeaders();
  const write = async (chunk: Uint8Array) => {
    if (res.write(chunk)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off("drain", done);
        abort.signal.removeEventListener("abort", done);
        resolve();
      };
      res.on("drain", done);
      abort.signal.addEventListener("abort", done);
    });
  };
  let error: ConnectError | undefined;
  try {
    for await (const frame of frames(requestId, headers, abort.signal)) {
      if (abort.signal.aborted) break;
      await write(
        gzip && frame.byteLength >= COMPRESS_MIN_BYTES
          ? encodeEnvelope(ENVELOPE_FLAG_COMPRESSED, gzipSync(frame))
          : encodeEnvelope(0, frame),
      );
    }
  } catch (err) {
    error = ConnectError.from(err);
    if (error.code === Code.Internal || error.code === Code.Unknown) logger.error({ err }, "RunSSE failed");
  }
  if (abort.signal.aborted) return;
  const end = new TextEncoder().encode(JSON.stringify(endStreamToJson(new Headers(), error, undefined)));
  res.end(encodeEnvelope(ENVELOPE_FLAG_END_STREAM, end));
}

/** The request headers as a fetch Headers. */
export function headersOf(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
  }
  return headers;
}
