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
 * When `cut` fires (the replica is draining) the stream stops after the frame being written and
 * the connection is closed without an end-stream, as if the replica had gone: the client
 * reconnects to another replica and resumes after the frames it has, all of them whole.
 */
export async function serveRunSse(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  headers: Headers,
  frames: (requestId: string, headers: Headers, signal: AbortSignal) => AsyncGenerator<Uint8Array>,
  logger: Logger,
  cut: AbortSignal,
): Promise<void> {
  const gzip = /\bgzip\b/.test(headers.get("connect-accept-encoding") ?? "");
  const abort = new AbortController();
  res.on("close", () => abort.abort());
  const onCut = () => abort.abort();
  cut.addEventListener("abort", onCut, { once: true });
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
  } finally {
    cut.removeEventListener("abort", onCut);
  }
  if (cut.aborted && !res.writableEnded) {
    // Flush what was written (whole envelopes), then close: no end-stream, so the client reconnects.
    if (res.socket) res.socket.end();
    else res.destroy();
    return;
  }
  if (abort.signal.aborted) return;
  const end = new TextEncoder().encode(JSON.stringify(endStreamToJson(new Headers(), error, undefined)));
  res.end(encodeEnvelope(ENVELOPE_FLAG_END_STREAM, end));
}

/** The request headers as a fetch Headers (HTTP/2 pseudo-headers left out). */
export function headersOf(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined && !k.startsWith(":")) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
  }
  return headers;
}
