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
import { Code } from "@connectrpc/connect";
import { SpanKind, trace } from "@opentelemetry/api";
import { ATTR, SPAN, withSpan, type Logger } from "@byok/telemetry";
import { AgentClientMessageSchema, encodeEnvelope } from "@byok/wire";
import type { Principal } from "./auth.js";
import type { createClientAppender } from "./bidi-append.js";
import { readClientHeaders } from "./client-headers.js";
import { endStreamFor } from "@byok/protocol";
import { invalidArgument, streamError } from "./errors.js";
import type { Admission } from "./open-streams.js";
import { checkedEnvelopes, requestCompression } from "./request-messages.js";
import type { OutputReader } from "./run-sse.js";
import { forwardOutput } from "./run-sse-stream.js";

const tracer = trace.getTracer("@byok/edge");

export const RUN_PATH = "/agent.v1.AgentService/Run";
const PROCEDURE = "agent.v1.AgentService/Run";

export interface RunDeps {
  append: ReturnType<typeof createClientAppender>;
  frames: OutputReader;
  maxMessageBytes: number;
  logger: Logger;
}

/** Serves one Run of `principal` (authenticated by the route before the body is read). */
export async function serveRun(
  req: IncomingMessage,
  res: ServerResponse,
  principal: Principal,
  headers: Headers,
  deps: RunDeps,
  admission: Extract<Admission, { ok: true }>,
): Promise<void> {
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
  let end: Uint8Array | undefined;
  try {
    const client = readClientHeaders(headers);
    if (Number.isNaN(client.resumeAfter)) throw invalidArgument("x-gateway-resume-after must be a non-negative integer.");
    const requestId = client.requestId || randomUUID();
    const rules = {
      input: AgentClientMessageSchema,
      binary: true,
      compression: requestCompression(headers, "connect-content-encoding"),
      readMaxBytes: deps.maxMessageBytes,
      procedure: PROCEDURE,
    };
    // The writer half: client messages to the request's input, concurrently with the reader.
    const writer = (async () => {
      let started = false;
      for await (const { bytes, message } of checkedEnvelopes(req, rules)) {
        let seqno = 0n;
        if (!started) {
          // Without a run_request/prewarm_request first no run ever starts, and the reader
          // would wait GATEWAY_NOT_FOUND_WAIT_MS for nothing: refuse it at once.
          const m = message.message.case;
          if (m !== "runRequest" && m !== "prewarmRequest") {
            throw invalidArgument(`The first ${PROCEDURE} message must be a run_request or prewarm_request; this one ${m ? `is a ${snakeCase(m)}` : "sets no AgentClientMessage field"}.`);
          }
          seqno = 1n;
          started = true;
        }
        // Each message is a turn's root like a BidiAppend: its bus entry and the run follow from it.
        await withSpan(
          tracer,
          SPAN.agentRunAppend,
          { kind: SpanKind.SERVER, attributes: { [ATTR.tenantId]: principal.tenantId, [ATTR.requestId]: requestId, [ATTR.appendSeqno]: Number(seqno) } },
          () => deps.append(principal, client, requestId, seqno, bytes, "AgentService/Run"),
        );
      }
      if (!started) throw invalidArgument(`The ${PROCEDURE} request stream ended before its first message (a run_request or prewarm_request).`);
    })();
    // A client that half-closes keeps reading; a bad message ends the Run with its error.
    const failed = writer.then(() => new Promise<never>(() => {}));
    failed.catch(() => {});
    // The reader half: RunSSE's reader of the same request; it ends with the stored end.
    const reading = new Promise<Uint8Array | undefined>((resolve) => {
      const r = deps.frames(principal, requestId, client, {
        heartbeat: (frame) => void send(encodeEnvelope(0, frame)),
        follow: (frames, signal) => resolve(forwardOutput(frames, (frame) => send(encodeEnvelope(0, frame)), signal, deps.logger)),
      });
      if (abort.signal.aborted) r.abort();
      else abort.signal.addEventListener("abort", () => r.abort(), { once: true });
    });
    end = await Promise.race([reading, failed]);
  } catch (err) {
    const error = streamError(err);
    if (error.code === Code.Internal || error.code === Code.Unknown) deps.logger.error({ err }, "Run failed");
    end = endStreamFor(error);
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
  if (abort.signal.aborted || res.writableEnded || !end) return;
  res.end(end);
  abort.abort();
}

function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
