import type { IncomingMessage, ServerResponse } from "node:http";
import { Code } from "@connectrpc/connect";
import { compressionGzip } from "@connectrpc/connect-node";
import { encodeEnvelope, ENVELOPE_FLAG_COMPRESSED } from "@byok/wire";
import type { Logger } from "@byok/telemetry";
import type { Principal } from "./auth.js";
import type { ClientHeaders } from "./client-headers.js";
import { endStreamFor } from "@byok/protocol";
import { streamError } from "./errors.js";
import type { OutputConsumer, OutputReader, OutputReading } from "./run-sse.js";
import type { Admitted } from "./open-streams.js";

/** Frames at least this large are gzip-compressed when the client accepts it (as connect-node does). */
const COMPRESS_MIN_BYTES = 1024;

/**
 * Sends a reader's frames with `send` until it ends, and returns the end-stream envelope to
 * write: the stored end as the reader returned it, or the thrown error's (logged when it is the
 * gateway's own fault). Stops early, returning undefined, when `signal` fires.
 */
export async function forwardOutput(
  frames: AsyncGenerator<Uint8Array, Uint8Array>,
  send: (frame: Uint8Array) => Promise<void>,
  signal: AbortSignal,
  logger: Logger,
): Promise<Uint8Array | undefined> {
  try {
    for (;;) {
      const next = await frames.next();
      if (next.done) return next.value;
      if (signal.aborted) return undefined;
      await send(next.value);
    }
  } catch (err) {
    const error = streamError(err);
    if (error.code === Code.Internal || error.code === Code.Unknown) logger.error({ err }, "reading the run's output failed");
    return endStreamFor(error);
  } finally {
    // Runs the reader's own clean-up (watch, reader presence) when it stopped early.
    await frames.return(new Uint8Array()).catch(() => {});
  }
}

/**
 * Writes a RunSSE response as a Connect server stream without decoding the stored frames:
 * each stored AgentServerMessage goes out as its own envelope (gzip-compressed per envelope,
 * on zlib's thread pool, only when `connect-accept-encoding` allows it), then the end-stream —
 * `{}` or the error with its `aiserver.v1.ErrorDetails` — over HTTP 200, never
 * HTTP-compressed. The content type is `text/event-stream` for Cursor (`x-cursor-streaming:
 * true`), else Connect's own. The admission is released when the stream ends. When its `cut`
 * fires (the replica is draining) the stream stops after the frame being written and the
 * connection is closed without an end-stream, as if the replica had gone: the client reconnects
 * to another replica and resumes after the frames it has, all of them whole.
 */
export function serveRunSse(
  res: ServerResponse,
  reader: { principal: Principal; requestId: string; client: ClientHeaders; gzip: boolean; frames: OutputReader },
  logger: Logger,
  admission: Admitted,
): void {
  // Taken apart: the stream holds none of `reader`.
  const { principal, requestId, client, gzip, frames } = reader;
  try {
    res.writeHead(200, {
      "content-type": client.streaming ? "text/event-stream" : "application/connect+proto",
      "cache-control": "no-cache",
      ...(gzip ? { "connect-content-encoding": "gzip" } : {}),
    });
    // Node holds the head until the first body write; before the run exists that would be the
    // first heartbeat, seconds later, and a client that awaits the head before its first
    // BidiAppend (docs/architecture.md, "Generations and the append gate") would lose that time every turn.
    res.flushHeaders();
  } catch (err) {
    admission.release();
    throw err;
  }
  const response = new RunSseResponse(res, gzip, logger, admission);
  response.reading = frames(principal, requestId, client, response);
  res.on("close", response.stop);
  admission.cut.addEventListener("abort", response.stop, { once: true });
}

/**
 * The response side of a RunSSE stream, its reader's consumer. While the stream waits for its
 * run this is all it holds here (a class and one listener, not a closure per callback); the
 * writer is made when the frames come (forwardToResponse).
 */
class RunSseResponse implements OutputConsumer {
  reading: OutputReading | undefined;
  /** On close and on the drain's cut: the reading stops. */
  readonly stop = (): void => this.reading?.abort();

  constructor(
    private readonly res: ServerResponse,
    private readonly gzip: boolean,
    private readonly logger: Logger,
    private readonly admission: Admitted,
  ) {}

  /** A heartbeat is not queued behind a write the client has not read yet. */
  heartbeat(frame: Uint8Array): void {
    if (!this.res.writableNeedDrain && !this.res.writableEnded) this.res.write(encodeEnvelope(0, frame));
  }

  follow(frames: AsyncGenerator<Uint8Array, Uint8Array>, signal: AbortSignal): void {
    const { res, admission, logger } = this;
    const { cut } = admission;
    // Not awaited: its failure (the client went away) ends the connection.
    forwardToResponse(res, frames, signal, this.gzip, logger).then(
      (end) => {
        cut.removeEventListener("abort", this.stop);
        admission.release();
        if (cut.aborted && !res.writableEnded) {
          // Flush what was written (whole envelopes), then close: no end-stream, so the client reconnects.
          if (res.socket) res.socket.end();
          else res.destroy();
          return;
        }
        if (signal.aborted || !end) return;
        res.end(end);
      },
      (err: unknown) => {
        cut.removeEventListener("abort", this.stop);
        admission.release();
        logger.debug({ err }, "RunSSE ended early");
        res.destroy();
      },
    );
  }
}

/**
 * Writes the frames as envelopes to `res` and returns the end-stream envelope to write
 * (undefined when `signal` stopped it). The stream's writer exists from here on, not while the
 * stream waited for its run.
 */
function forwardToResponse(res: ServerResponse, frames: AsyncGenerator<Uint8Array, Uint8Array>, signal: AbortSignal, gzip: boolean, logger: Logger): Promise<Uint8Array | undefined> {
  const write = async (chunk: Uint8Array) => {
    if (res.write(chunk)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off("drain", done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      res.on("drain", done);
      signal.addEventListener("abort", done);
    });
  };
  const send = async (frame: Uint8Array) => {
    if (!gzip || frame.byteLength < COMPRESS_MIN_BYTES) return write(encodeEnvelope(0, frame));
    const compressed = await compressionGzip.compress(frame);
    if (!signal.aborted) await write(encodeEnvelope(ENVELOPE_FLAG_COMPRESSED, compressed));
  };
  return forwardOutput(frames, send, signal, logger);
}

/** Whether the client accepts gzip-compressed envelopes (`connect-accept-encoding`). */
export function acceptsGzip(headers: Headers): boolean {
  return /\bgzip\b/.test(headers.get("connect-accept-encoding") ?? "");
}

/** The request headers as a fetch Headers (HTTP/2 pseudo-headers left out). */
export function headersOf(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined && !k.startsWith(":")) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
  }
  return headers;
}

/**
 * Drops an HTTP/1.1 request's header strings (`headers` and `rawHeaders`, ~1.4 KiB) once
 * everything a long-lived response needs of them was read: node:http keeps the IncomingMessage as long as its
 * response, and reads neither again for a request whose body was read (keep-alive, `expect` and
 * `host` were decided when the request arrived). `headers` has a setter for this; later readers
 * see no headers rather than stale ones.
 */
export function releaseHeaders(req: IncomingMessage): void {
  // HTTP/1.1 only: node:http2's compatibility request has read-only `headers` (assigning them
  // throws) and its stream keeps the header block anyway.
  if (req.httpVersionMajor !== 1) return;
  req.headers = {};
  req.rawHeaders = [];
}
