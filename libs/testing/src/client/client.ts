import { kvGetBlobResultMessage, kvSetBlobResultMessage } from "./messages.js";
import { create, toBinary } from "@bufbuild/protobuf";
import { BidiRequestIdSchema, encodeEnvelope, type AgentClientMessage, type AgentServerMessage } from "@byok/wire";
import { BIDI_APPEND_PATH, encodeAppendBody, type AppendOptions, type AppendResult } from "./append.js";
import { collectItems, type CollectResult } from "./collect.js";
import { parseConnectError, type ConnectErrorBody } from "./connect-error.js";
import { createFrameDecoder, type StreamItem } from "./frames.js";
import { cursorHeaders, type CursorIdentity } from "./headers.js";
import { fetchTransport, type HttpTransport } from "./transport.js";

export const RUN_SSE_PATH = "/agent.v1.AgentService/RunSSE";

export interface CursorClientOptions extends CursorIdentity {
  /** Gateway origin, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** How POSTs are sent (default: Node's fetch; `nodeHttpTransport()` for load generation). */
  transport?: HttpTransport;
}

export interface RunSseOptions {
  /** `x-gateway-resume-after: N`: skip the first N stored frames of this generation. */
  resumeAfter?: number;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Send `connect-accept-encoding: gzip`; frames with flag 0x01 are then gunzipped. */
  acceptCompression?: boolean;
  originalRequestId?: string;
}

export interface RunSseResponse {
  status: number;
  headers: Headers;
  /** The stream's items. Throws StreamTruncatedError if the body ends without end-stream; on a non-200 status, throws a ConnectHttpError at once. */
  frames: AsyncIterable<StreamItem>;
  /** Set when the status is not 200 (body read and parsed as a Connect error). */
  httpError?: ConnectErrorBody;
}

/** RunSSE (or BidiAppend) answered with a non-200 HTTP status. */
export class ConnectHttpError extends Error {
  override readonly name = "ConnectHttpError";
  constructor(readonly error: ConnectErrorBody) {
    super(`HTTP ${error.status} ${error.code}: ${error.message}`);
  }
}

/** Handle given to `runTurn`'s `onMessage` hook to answer queries of the live run. */
export interface TurnHandle {
  readonly client: CursorClient;
  readonly requestId: string;
  /** The seqno the next `append` will use. */
  readonly nextSeqno: number;
  /** Appends `msg` with the next seqno of this turn; the result is also recorded in `appends`. */
  append(msg: AgentClientMessage | Uint8Array, opts?: AppendOptions): Promise<AppendResult>;
}

export interface RunTurnOptions {
  requestId: string;
  /** The first append (seqno `firstSeqno`), usually `runRequestMessage(...)`. */
  message: AgentClientMessage | Uint8Array;
  /** Default 1. */
  firstSeqno?: number;
  /** `request` (default): append right after starting RunSSE, without waiting; `headers`: after RunSSE's response headers. */
  appendAfter?: "request" | "headers";
  runSse?: RunSseOptions;
  append?: AppendOptions;
  /** Called for every non-heartbeat message before the next is read; answer exec/kv/interaction queries through `turn.append`. */
  onMessage?: (message: AgentServerMessage, turn: TurnHandle) => void | Promise<void>;
  /**
   * Act as Cursor's blob store (default true): answer `set_blob_args` by storing the blob in
   * `blobs` and appending `set_blob_result`, and `get_blob_args` from `blobs`, before `onMessage`.
   */
  answerKv?: boolean;
  /** The client's blob store (hex blob id → bytes); a fresh one when omitted. */
  blobs?: Map<string, Uint8Array>;
}

export interface RunTurnResult extends CollectResult {
  status: number;
  httpError?: ConnectErrorBody;
  /** Results of every append of the turn, in call order (the first one is the `message`). */
  appends: AppendResult[];
  /** The client's blob store after the turn. */
  blobs: Map<string, Uint8Array>;
}

/** A Cursor-protocol client over HTTP/1.1 (Node's fetch or node:http), as a real Cursor client in HTTP/1.1 mode. */
export interface CursorClient {
  /** POST BidiAppend. Never throws for HTTP errors: a non-200 answer is `{ ok: false, status, code, message }`. */
  append(requestId: string, seqno: number | bigint, msg: AgentClientMessage | Uint8Array, opts?: AppendOptions): Promise<AppendResult>;
  /** POST RunSSE; resolves once response headers arrived. */
  runSse(requestId: string, opts?: RunSseOptions): Promise<RunSseResponse>;
  /** Opens RunSSE and reads it to its end. */
  collect(requestId: string, opts?: RunSseOptions): Promise<CollectResult & { status: number; httpError?: ConnectErrorBody }>;
  /** Opens RunSSE, appends `message` without waiting (docs/protocol.md), answers queries via `onMessage`, reads to the end. */
  runTurn(opts: RunTurnOptions): Promise<RunTurnResult>;
}

export function createCursorClient(options: CursorClientOptions): CursorClient {
  const base = options.baseUrl.replace(/\/+$/, "");
  const post = options.transport ?? fetchTransport;

  const append: CursorClient["append"] = async (requestId, seqno, msg, opts = {}) => {
    const { body, headers } = encodeAppendBody(requestId, seqno, msg, opts);
    const res = await post(base + BIDI_APPEND_PATH, {
      headers: { ...cursorHeaders(requestId, options, opts.originalRequestId), ...headers, ...opts.headers },
      body,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    const text = await res.text();
    if (res.status === 200) return { ok: true };
    return { ok: false, ...parseConnectError(res.status, text) };
  };

  const runSse: CursorClient["runSse"] = async (requestId, opts = {}) => {
    const headers: Record<string, string> = {
      ...cursorHeaders(requestId, options, opts.originalRequestId),
      "content-type": "application/connect+proto",
      "accept-encoding": "gzip,br",
    };
    if (opts.acceptCompression) headers["connect-accept-encoding"] = "gzip";
    if (opts.resumeAfter !== undefined) headers["x-gateway-resume-after"] = String(opts.resumeAfter);
    const body = encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })));
    const res = await post(base + RUN_SSE_PATH, {
      headers: { ...headers, ...opts.headers },
      body,
      stream: true,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    if (res.status !== 200) {
      const httpError = parseConnectError(res.status, await res.text());
      return {
        status: res.status,
        headers: res.headers,
        httpError,
        frames: {
          [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new ConnectHttpError(httpError)) }),
        },
      };
    }
    const stream = res.body;
    const encoding = res.headers.get("connect-content-encoding");
    async function* frames(): AsyncGenerator<StreamItem> {
      const decoder = createFrameDecoder(encoding);
      for await (const chunk of stream) {
        for (const item of decoder.push(chunk)) yield item;
      }
      decoder.finish();
    }
    return { status: res.status, headers: res.headers, frames: frames() };
  };

  const client: CursorClient = {
    append,
    runSse,
    async collect(requestId, opts) {
      const res = await runSse(requestId, opts);
      if (res.httpError) return { ...emptyCollect(), status: res.status, httpError: res.httpError };
      return { ...(await collectItems(res.frames)), status: res.status };
    },
    async runTurn(opts) {
      let seqno = opts.firstSeqno ?? 1;
      const appends: Promise<AppendResult>[] = [];
      const appendNext = (msg: AgentClientMessage | Uint8Array, appendOpts?: AppendOptions): Promise<AppendResult> => {
        const p = append(opts.requestId, seqno++, msg, { ...opts.append, ...appendOpts });
        appends.push(p);
        return p;
      };
      const sse = runSse(opts.requestId, opts.runSse);
      if ((opts.appendAfter ?? "request") === "headers") await sse;
      void appendNext(opts.message).catch(() => {}); // awaited below through `appends`
      const res = await sse;
      const handle: TurnHandle = {
        client,
        requestId: opts.requestId,
        get nextSeqno() {
          return seqno;
        },
        append: appendNext,
      };
      const blobs = opts.blobs ?? new Map<string, Uint8Array>();
      const answerKv = opts.answerKv ?? true;
      const onMessage = async (m: AgentServerMessage) => {
        if (answerKv && m.message.case === "kvServerMessage") {
          const kv = m.message.value;
          // Answered as a Cursor client does: at once, without waiting for the previous answer's
          // append to complete, so the answers to one checkpoint's blobs travel together (the
          // seqno gate orders them); every append's result is still awaited below.
          if (kv.message.case === "setBlobArgs") {
            blobs.set(Buffer.from(kv.message.value.blobId).toString("hex"), kv.message.value.blobData);
            void appendNext(kvSetBlobResultMessage(kv.id)).catch(() => {});
          } else if (kv.message.case === "getBlobArgs") {
            void appendNext(kvGetBlobResultMessage(kv.id, blobs.get(Buffer.from(kv.message.value.blobId).toString("hex")))).catch(() => {});
          }
        }
        await opts.onMessage?.(m, handle);
      };
      const collected = res.httpError ? emptyCollect() : await collectItems(res.frames, onMessage);
      return {
        ...collected,
        blobs,
        status: res.status,
        ...(res.httpError ? { httpError: res.httpError } : {}),
        appends: await Promise.all(appends),
      };
    },
  };
  return client;
}

function emptyCollect(): CollectResult {
  return { messages: [], end: undefined, truncated: false, textDeltas: "", checkpoints: 0, heartbeats: 0 };
}
