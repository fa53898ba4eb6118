/**
 * `agent.v1.AgentService/Run` over HTTP/2: Cursor's bidirectional transport (AgentClientMessage
 * in, AgentServerMessage out, Connect streaming envelopes, no hex, no seqno). A Run is exactly
 * a BidiAppend writer plus a RunSSE reader of one request (docs/control-plane.md "Transports"):
 * - every client message is appended to the request's input as BidiAppend would (the first
 *   `run_request`/`prewarm_request` of a connection with seqno 1, so a reconnect that sends it
 *   again is a duplicate of the live run; every other message unordered-by-seqno, in stream
 *   order);
 * - the response replays the request's output from the start (or after
 *   `x-gateway-resume-after`) and follows it live, heartbeats after silence, end-stream at the
 *   end — the same reader as RunSSE, so a Run that reconnects to another replica resumes, and
 *   a worker's death behind it loses nothing.
 * The request id is `x-request-id` (what Cursor sends as the BidiRequestId); without one a
 * fresh id is used and the Run cannot be resumed.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { gunzipSync } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import { endStreamToJson } from "@connectrpc/connect/protocol-connect";
import { fromBinary } from "@bufbuild/protobuf";
import { SpanKind, trace } from "@opentelemetry/api";
import { ATTR, SPAN, withSpan, type Logger } from "@byok/telemetry";
import { AgentClientMessageSchema, encodeEnvelope, ENVELOPE_FLAG_COMPRESSED, ENVELOPE_FLAG_END_STREAM, ENVELOPE_HEADER_BYTES } from "@byok/wire";
import type { Authenticator } from "./auth.js";
import type { createClientAppender } from "./bidi-append.js";
import { readClientHeaders } from "./client-headers.js";
import { invalidArgument, resourceExhausted } from "./errors.js";
import type { Admission } from "./open-streams.js";
import { headersOf } from "./run-sse-stream.js";

const tracer = trace.getTracer("@byok/edge");

export const RUN_PATH = "/agent.v1.AgentService/Run";

export interface RunDeps {
  auth: Authenticator;
  append: ReturnType<typeof createClientAppender>;
  frames: (requestId: string, headers: Headers, signal: AbortSignal) => AsyncGenerator<Uint8Array>;
  maxMessageBytes: number;
  logger: Logger;
}

export async function serveRun(req: IncomingMessage, res: ServerResponse, deps: RunDeps, admission: Extract<Admission, { ok: true }>): Promise<void> {
  const headers = headersOf(req);
  const abort = new AbortController();
  res.on("close", () => abort.abort());
  const onCut = () => abort.abort();
  admission.cut.addEventListener("abort", onCut, { once: true });
  res.writeHead(200, { "content-type": "application/connect+proto", "cache-control": "no-cache" });
  res.flushHeaders();
  let writing = Promise.resolve();
  const send = (chunk: Uint8Array) => {
    writing = writing.then(
      () =>
        new Promise<void>((resolve) => {
          if (abort.signal.aborted || res.writableEnded || res.write(chunk)) return resolve();
          res.once("drain", resolve);
          abort.signal.addEventListener("abort", () => resolve(), { once: true });
        }),
    );
    return writing;
  };
  let error: ConnectError | undefined;
  try {
    const principal = await deps.auth.authenticate(headers);
    const client = readClientHeaders(headers);
    if (Number.isNaN(client.resumeAfter)) throw invalidArgument("x-gateway-resume-after must be a non-negative integer.");
    const requestId = client.requestId || randomUUID();
    const compressed = headers.get("connect-content-encoding")?.trim().toLowerCase();
    if (compressed !== undefined && compressed !== "identity" && compressed !== "gzip") {
      throw invalidArgument(`connect-content-encoding '${compressed.slice(0, 40)}' is not supported; send gzip or uncompressed envelopes.`);
    }
    // The writer half: client messages to the request's input, concurrently with the reader.
    const writer = (async () => {
      let started = false;
      for await (const payload of envelopes(req, deps.maxMessageBytes, compressed === "gzip")) {
        let seqno = 0n;
        if (!started) {
          // Without a run_request/prewarm_request first no run ever starts, and the reader
          // would wait GATEWAY_NOT_FOUND_WAIT_MS for nothing: refuse it at once.
          const m = fromBinary(AgentClientMessageSchema, payload).message.case;
          if (m !== "runRequest" && m !== "prewarmRequest") {
            throw invalidArgument(`The first AgentService/Run message must be a run_request or prewarm_request; this one ${m ? `is a ${snakeCase(m)}` : "sets no AgentClientMessage field"}.`);
          }
          seqno = 1n;
          started = true;
        }
        // Each message is a turn's root like a BidiAppend: its bus entry and the run follow from it.
        await withSpan(
          tracer,
          SPAN.agentRunAppend,
          { kind: SpanKind.SERVER, attributes: { [ATTR.tenantId]: principal.tenantId, [ATTR.requestId]: requestId, [ATTR.appendSeqno]: Number(seqno) } },
          () => deps.append(principal, client, requestId, seqno, payload, "AgentService/Run"),
        );
      }
      if (!started) throw invalidArgument("The AgentService/Run request stream ended before its first message (a run_request or prewarm_request).");
    })();
    // A client that half-closes keeps reading; a bad message ends the Run with its error.
    const failed = writer.then(() => new Promise<never>(() => {}));
    failed.catch(() => {});
    // The reader half: RunSSE's reader of the same request.
    const reading = (async () => {
      for await (const frame of deps.frames(requestId, headers, abort.signal)) {
        if (abort.signal.aborted) break;
        await send(encodeEnvelope(0, frame));
      }
    })();
    reading.catch(() => {});
    await Promise.race([reading, failed]);
  } catch (err) {
    error = err instanceof ConnectError ? err : ConnectError.from(err);
    if (error.code === Code.Internal || error.code === Code.Unknown) deps.logger.error({ err }, "Run failed");
  } finally {
    admission.cut.removeEventListener("abort", onCut);
    admission.release();
  }
  await writing;
  if (admission.cut.aborted && !res.writableEnded) {
    // Draining: close without an end-stream, so the client reconnects and resumes elsewhere.
    res.destroy();
    return;
  }
  if (abort.signal.aborted || res.writableEnded) return;
  const end = new TextEncoder().encode(JSON.stringify(endStreamToJson(new Headers(), error, undefined)));
  res.end(encodeEnvelope(ENVELOPE_FLAG_END_STREAM, end));
  abort.abort();
}

/** The client's envelopes, checked: flags, size, decompression, decoding; each failure a ConnectError. */
async function* envelopes(req: AsyncIterable<Buffer>, max: number, gzip: boolean): AsyncGenerator<Uint8Array> {
  let buf: Buffer = Buffer.alloc(0);
  for await (const chunk of req) {
    buf = buf.byteLength === 0 ? chunk : Buffer.concat([buf, chunk]);
    while (buf.byteLength >= ENVELOPE_HEADER_BYTES) {
      const flags = buf[0]!;
      const len = buf.readUInt32BE(1);
      if (flags & ~ENVELOPE_FLAG_COMPRESSED) {
        throw invalidArgument(`An AgentService/Run request envelope has flags 0x${flags.toString(16)}; a client sends only 0x00 or 0x01 (compressed).`);
      }
      if (len > max) throw resourceExhausted(`An AgentService/Run message is ${len} bytes; the limit is ${max} bytes.`);
      if (buf.byteLength < ENVELOPE_HEADER_BYTES + len) break;
      let payload: Uint8Array = buf.subarray(ENVELOPE_HEADER_BYTES, ENVELOPE_HEADER_BYTES + len);
      buf = buf.subarray(ENVELOPE_HEADER_BYTES + len);
      if (flags & ENVELOPE_FLAG_COMPRESSED) {
        if (!gzip) throw invalidArgument("A compressed AgentService/Run envelope needs connect-content-encoding: gzip.");
        try {
          payload = gunzipSync(payload, { maxOutputLength: max });
        } catch {
          throw invalidArgument("An AgentService/Run envelope is not valid gzip data (or decompresses past the size limit).");
        }
      }
      try {
        fromBinary(AgentClientMessageSchema, payload);
      } catch {
        throw invalidArgument("An AgentService/Run message is not a valid agent.v1.AgentClientMessage (binary protobuf).");
      }
      yield payload;
    }
  }
  if (buf.byteLength > 0) throw invalidArgument(`The AgentService/Run request stream ended inside an envelope (${buf.byteLength} bytes left over).`);
}

function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
