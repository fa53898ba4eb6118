import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync, gzipSync } from "node:zlib";
import { create, fromBinary, fromJsonString, toBinary } from "@bufbuild/protobuf";
import {
  AgentClientMessageSchema,
  AgentMode,
  AgentServerMessageSchema,
  BidiAppendRequestSchema,
  BidiRequestIdSchema,
  ENVELOPE_FLAG_COMPRESSED,
  ENVELOPE_FLAG_END_STREAM,
  EnvelopeReader,
  ErrorDetailsSchema,
  ErrorDetails_Error,
  decodeHex,
  encodeEnvelope,
  type AgentServerMessage,
} from "@byok/wire";
import { afterEach, describe, expect, it } from "vitest";
import {
  cancelMessage,
  createCursorClient,
  createFrameDecoder,
  execResultMessage,
  fetchTransport,
  nodeHttpTransport,
  type HttpTransport,
  heartbeatMessage,
  interactionResponseMessage,
  kvSetBlobResultMessage,
  runRequestMessage,
  StreamTruncatedError,
  type StreamItem,
} from "../src/client/index.js";

const roundTrip = (m: ReturnType<typeof heartbeatMessage>) => fromBinary(AgentClientMessageSchema, toBinary(AgentClientMessageSchema, m));

describe("message builders", () => {
  it("run_request carries text, ids, mode, model and credentials through the wire", () => {
    const m = roundTrip(
      runRequestMessage({ text: "hi", conversationId: "c1", runId: "r1", messageId: "m1", modelId: "gpt-x", mode: AgentMode.ASK, credentials: { apiKey: "sk-test-123456789", baseUrl: "https://llm.local" }, parameters: { thinking_effort: "high" } }),
    );
    expect(m.message.case).toBe("runRequest");
    if (m.message.case !== "runRequest") return;
    const rr = m.message.value;
    expect(rr.conversationId).toBe("c1");
    expect(rr.runId).toBe("r1");
    // No state given: the message carries none (a client that keeps no state), not an empty one.
    expect(rr.conversationState).toBeUndefined();
    expect(rr.action?.action.case).toBe("userMessageAction");
    if (rr.action?.action.case !== "userMessageAction") return;
    expect(rr.action.action.value.userMessage).toMatchObject({ text: "hi", messageId: "m1", mode: AgentMode.ASK });
    expect(rr.requestedModel?.modelId).toBe("gpt-x");
    expect(rr.requestedModel?.parameters.map((p) => [p.id, p.value])).toEqual([["thinking_effort", "high"]]);
    expect(rr.requestedModel?.credentials).toMatchObject({ case: "apiKeyCredentials", value: { apiKey: "sk-test-123456789", baseUrl: "https://llm.local" } });
  });

  it("run_request without credentials, and with bedrock / azure ones", () => {
    // A state with zero turns survives the wire as present (restored to the beginning).
    const zero = roundTrip(runRequestMessage({ text: "t", conversationId: "c", modelId: "m", conversationState: {} }));
    expect(zero.message.case === "runRequest" && zero.message.value.conversationState?.turns).toEqual([]);
    const none = roundTrip(runRequestMessage({ text: "t", conversationId: "c", modelId: "m" }));
    expect(none.message.case === "runRequest" && none.message.value.requestedModel?.credentials.case).toBeUndefined();
    const bedrock = roundTrip(runRequestMessage({ text: "t", conversationId: "c", modelId: "m", credentials: { bedrock: { accessKey: "AK", secretKey: "SK", region: "us-east-1" } } }));
    expect(bedrock.message.case === "runRequest" && bedrock.message.value.requestedModel?.credentials).toMatchObject({ case: "bedrockCredentials", value: { accessKey: "AK", secretKey: "SK", region: "us-east-1" } });
    const azure = roundTrip(runRequestMessage({ text: "t", conversationId: "c", modelId: "m", credentials: { azure: { apiKey: "k", baseUrl: "https://a", deployment: "d" } } }));
    expect(azure.message.case === "runRequest" && azure.message.value.requestedModel?.credentials.case).toBe("azureCredentials");
  });

  it("heartbeat, cancel, exec result, interaction response and kv ack", () => {
    expect(roundTrip(heartbeatMessage()).message.case).toBe("clientHeartbeat");
    const cancel = roundTrip(cancelMessage("user"));
    expect(cancel.message.case === "conversationAction" && cancel.message.value.action).toMatchObject({ case: "cancelAction", value: { reason: "user" } });
    const exec = roundTrip(execResultMessage({ id: 7, execId: "e7", result: { case: "readResult", value: {} } }));
    expect(exec.message.case === "execClientMessage" && exec.message.value).toMatchObject({ id: 7, execId: "e7", message: { case: "readResult" } });
    const ir = roundTrip(interactionResponseMessage({ id: 3, result: { case: "askQuestionInteractionResponse", value: {} } }));
    expect(ir.message.case === "interactionResponse" && ir.message.value).toMatchObject({ id: 3, result: { case: "askQuestionInteractionResponse" } });
    const kv = roundTrip(kvSetBlobResultMessage(9));
    expect(kv.message.case === "kvClientMessage" && kv.message.value).toMatchObject({ id: 9, message: { case: "setBlobResult" } });
  });
});

// ---- local HTTP server fixture --------------------------------------------------------------

interface Recorded {
  path: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

type Handler = (req: Recorded, res: ServerResponse) => Promise<void> | void;

let server: Server | undefined;
afterEach(async () => {
  if (server) {
    server.closeAllConnections();
    server.close();
    await once(server, "close");
    server = undefined;
  }
});

async function serve(handler: Handler): Promise<{ baseUrl: string; requests: Recorded[] }> {
  const requests: Recorded[] = [];
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rec = { path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks) };
    requests.push(rec);
    await handler(rec, res);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

/** Writes `bytes` in pieces of `size`, waiting for each write to be flushed to the socket. */
async function writeSplit(res: ServerResponse, bytes: Uint8Array, size: number): Promise<void> {
  res.socket?.setNoDelay(true);
  for (let i = 0; i < bytes.byteLength; i += size) {
    const piece = bytes.subarray(i, i + size);
    await new Promise<void>((resolve, reject) => res.write(piece, (err) => (err ? reject(err) : resolve())));
  }
}

const serverMsg = (init: Parameters<typeof create<typeof AgentServerMessageSchema>>[1]): Uint8Array =>
  toBinary(AgentServerMessageSchema, create(AgentServerMessageSchema, init));

function handMadeStream(): Uint8Array {
  const text = (t: string) => serverMsg({ message: { case: "interactionUpdate", value: { message: { case: "textDelta", value: { text: t } } } } });
  const heartbeat = serverMsg({ message: { case: "interactionUpdate", value: { message: { case: "heartbeat", value: {} } } } });
  const checkpoint = serverMsg({ message: { case: "conversationCheckpointUpdate", value: { pendingToolCalls: ["x"] } } });
  const turnEnded = serverMsg({ message: { case: "interactionUpdate", value: { message: { case: "turnEnded", value: { inputTokens: 12n, outputTokens: 3n } } } } });
  const detail = Buffer.from(toBinary(ErrorDetailsSchema, create(ErrorDetailsSchema, { error: ErrorDetails_Error.PROVIDER_ERROR }))).toString("base64").replace(/=+$/, "");
  const end = new TextEncoder().encode(JSON.stringify({ error: { code: "unavailable", message: "provider down", details: [{ type: "aiserver.v1.ErrorDetails", value: detail }] } }));
  const parts = [
    encodeEnvelope(0, checkpoint),
    encodeEnvelope(0, text("Hel")),
    encodeEnvelope(0, heartbeat),
    encodeEnvelope(ENVELOPE_FLAG_COMPRESSED, new Uint8Array(gzipSync(text("lo, ")))),
    encodeEnvelope(0, text("world")),
    encodeEnvelope(0, checkpoint),
    encodeEnvelope(0, turnEnded),
    encodeEnvelope(ENVELOPE_FLAG_END_STREAM, end),
  ];
  return Buffer.concat(parts);
}

/** Both ways the client sends (fetch for tests, node:http for load generation) read the same streams. */
const transports: [string, () => HttpTransport][] = [["fetch", () => fetchTransport], ["node:http", () => nodeHttpTransport()]];

describe.each(transports)("RunSSE parsing over %s", (_name, transport) => {
  it("decodes envelopes split across TCP chunks, a gzip frame, heartbeats and the end-stream", async () => {
    const body = handMadeStream();
    const { baseUrl, requests } = await serve(async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", "connect-content-encoding": "gzip" });
      await writeSplit(res, body, 3);
      res.end();
    });
    const client = createCursorClient({ transport: transport(), baseUrl, authToken: "tok", ghostMode: true });
    const r = await client.collect("req-1", { acceptCompression: true, resumeAfter: 2 });

    expect(r.status).toBe(200);
    expect(r.truncated).toBe(false);
    expect(r.textDeltas).toBe("Hello, world");
    expect(r.heartbeats).toBe(1);
    expect(r.checkpoints).toBe(2);
    expect(r.messages).toHaveLength(6);
    expect(r.turnEnded?.inputTokens).toBe(12n);
    expect(r.end).toMatchObject({ ok: false, code: "unavailable", message: "provider down" });
    expect(r.end?.ok === false && r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.PROVIDER_ERROR);

    const req = requests[0]!;
    expect(req.path).toBe("/agent.v1.AgentService/RunSSE");
    expect(req.headers["content-type"]).toBe("application/connect+proto");
    expect(req.headers["connect-protocol-version"]).toBe("1");
    expect(req.headers["x-cursor-streaming"]).toBe("true");
    expect(req.headers["connect-accept-encoding"]).toBe("gzip");
    expect(req.headers["x-gateway-resume-after"]).toBe("2");
    expect(req.headers["x-request-id"]).toBe("req-1");
    expect(req.headers["x-original-request-id"]).toBe("req-1");
    expect(req.headers["x-ghost-mode"]).toBe("true");
    expect(req.headers.authorization).toBe("Bearer tok");
    const envs = new EnvelopeReader().push(req.body);
    expect(envs).toHaveLength(1);
    expect(envs[0]!.flags).toBe(0);
    expect(fromBinary(BidiRequestIdSchema, envs[0]!.data).requestId).toBe("req-1");
  });

  it("the pure decoder gives the same items for any split, including one byte at a time", () => {
    const body = handMadeStream();
    const whole = createFrameDecoder("gzip").push(body);
    const dec = createFrameDecoder("gzip");
    const items: StreamItem[] = [];
    for (let i = 0; i < body.byteLength; i++) items.push(...dec.push(body.subarray(i, i + 1)));
    dec.finish();
    expect(items.map((i) => i.kind)).toEqual(whole.map((i) => i.kind));
    expect(items).toHaveLength(8);
  });

  it("a body that closes without end-stream is truncated, never a success", async () => {
    const { baseUrl } = await serve(async (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const m = encodeEnvelope(0, serverMsg({ message: { case: "interactionUpdate", value: { message: { case: "textDelta", value: { text: "partial" } } } } }));
      await writeSplit(res, Buffer.concat([m, m.subarray(0, 4)]), 5);
      res.end();
    });
    const client = createCursorClient({ transport: transport(), baseUrl });
    const r = await client.collect("req-t");
    expect(r.truncated).toBe(true);
    expect(r.end).toBeUndefined();
    expect(r.textDeltas).toBe("partial");
    const raw = await client.runSse("req-t");
    await expect(async () => {
      for await (const _ of raw.frames) void _;
    }).rejects.toBeInstanceOf(StreamTruncatedError);
  });

  it("an HTTP error answer is reported with its Connect code", async () => {
    const { baseUrl } = await serve((_req, res) => {
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ code: "unauthenticated", message: "bad token" }));
    });
    const r = await createCursorClient({ transport: transport(), baseUrl }).collect("req-e");
    expect(r.status).toBe(401);
    expect(r.httpError).toEqual({ status: 401, code: "unauthenticated", message: "bad token" });
  });
});

describe("BidiAppend", () => {
  it("sends application/proto with hex data, gzip on request, JSON form, and parses unary errors", async () => {
    const { baseUrl, requests } = await serve((req, res) => {
      if (req.headers["x-fail"]) {
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ code: "invalid_argument", message: "seqno beyond the window" }));
        return;
      }
      res.writeHead(200, { "content-type": "application/proto" }).end();
    });
    const client = createCursorClient({ baseUrl, authToken: "tok" });
    const msg = heartbeatMessage();
    const bytes = toBinary(AgentClientMessageSchema, msg);

    expect(await client.append("req-a", 1, msg)).toEqual({ ok: true });
    expect(await client.append("req-a", 2n, msg, { gzip: true, binary: true })).toEqual({ ok: true });
    expect(await client.append("req-a", 3, msg, { json: true, originalRequestId: "orig" })).toEqual({ ok: true });
    expect(await client.append("req-a", 99, msg, { headers: { "x-fail": "1" } })).toEqual({ ok: false, status: 400, code: "invalid_argument", message: "seqno beyond the window" });

    const [plain, gz, json] = requests;
    expect(plain!.path).toBe("/aiserver.v1.BidiService/BidiAppend");
    expect(plain!.headers["content-type"]).toBe("application/proto");
    expect(plain!.headers["connect-protocol-version"]).toBe("1");
    expect(plain!.headers.authorization).toBe("Bearer tok");
    expect(plain!.headers["x-cursor-client-type"]).toBeDefined();
    expect(plain!.headers["x-cursor-client-version"]).toBeDefined();
    const p = fromBinary(BidiAppendRequestSchema, plain!.body);
    expect(p.requestId?.requestId).toBe("req-a");
    expect(p.appendSeqno).toBe(1n);
    expect(decodeHex(p.data)).toEqual(bytes);

    expect(gz!.headers["content-encoding"]).toBe("gzip");
    const g = fromBinary(BidiAppendRequestSchema, gunzipSync(gz!.body));
    expect(g.appendSeqno).toBe(2n);
    expect(new Uint8Array(g.dataBinary)).toEqual(bytes);
    expect(g.data).toBe("");

    expect(json!.headers["content-type"]).toBe("application/json");
    expect(json!.headers["x-original-request-id"]).toBe("orig");
    const j = fromJsonString(BidiAppendRequestSchema, json!.body.toString("utf8"));
    expect(j.appendSeqno).toBe(3n);
    expect(j.requestId?.requestId).toBe("req-a");
  });
});

/**
 * A RunSSE that sends `query`, waits until the client's kv answer was appended, then sends
 * `tail` and the end-stream `{}`; records every append.
 */
async function serveOneQuery(query: Uint8Array, tail: Uint8Array[] = []) {
  const appended: { seqno: bigint; kind: string | undefined }[] = [];
  let wakeStream: (() => void) | undefined;
  const answered = new Promise<void>((resolve) => (wakeStream = resolve));
  const { baseUrl } = await serve(async (req, res) => {
    if (req.path.endsWith("BidiAppend")) {
      const a = fromBinary(BidiAppendRequestSchema, req.body);
      const m = fromBinary(AgentClientMessageSchema, decodeHex(a.data) as Uint8Array);
      appended.push({ seqno: a.appendSeqno, kind: m.message.case });
      res.writeHead(200).end();
      if (m.message.case === "kvClientMessage") wakeStream!();
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    await writeSplit(res, encodeEnvelope(0, query), 64);
    await answered; // the stream continues only after the client's answer arrived
    await writeSplit(res, Buffer.concat([...tail.map((t) => encodeEnvelope(0, t)), encodeEnvelope(ENVELOPE_FLAG_END_STREAM, new TextEncoder().encode("{}"))]), 7);
    res.end();
  });
  return { baseUrl, appended };
}

describe.each(transports)("runTurn over %s", (_name, transport) => {
  it("opens RunSSE, appends seqno 1, and lets the hook answer a query with seqno 2", async () => {
    const query: Uint8Array = serverMsg({ message: { case: "kvServerMessage", value: { id: 5, message: { case: "setBlobArgs", value: {} } } } });
    const done: AgentServerMessage = create(AgentServerMessageSchema, { message: { case: "interactionUpdate", value: { message: { case: "textDelta", value: { text: "done" } } } } });
    const { baseUrl, appended } = await serveOneQuery(query, [toBinary(AgentServerMessageSchema, done)]);
    const client = createCursorClient({ transport: transport(), baseUrl });
    const r = await client.runTurn({
      requestId: "req-turn",
      message: runRequestMessage({ text: "go", conversationId: "c", modelId: "m" }),
      // This test answers KV itself (the default would do it before the hook).
      answerKv: false,
      onMessage: async (m, turn) => {
        if (m.message.case === "kvServerMessage") await turn.append(kvSetBlobResultMessage(m.message.value.id));
      },
    });
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toBe("done");
    expect(r.appends).toEqual([{ ok: true }, { ok: true }]);
    expect(appended).toEqual([
      { seqno: 1n, kind: "runRequest" },
      { seqno: 2n, kind: "kvClientMessage" },
    ]);
  });
});

describe("runTurn as Cursor's blob store", () => {
  it("answers set_blob_args by default, storing the blob and appending set_blob_result", async () => {
    const blobId = new Uint8Array(32).fill(7);
    const query = serverMsg({ message: { case: "kvServerMessage", value: { id: 9, message: { case: "setBlobArgs", value: { blobId, blobData: new Uint8Array([1, 2, 3]) } } } } });
    const { baseUrl, appended } = await serveOneQuery(query);
    const r = await createCursorClient({ baseUrl }).runTurn({ requestId: "kv-auto", message: runRequestMessage({ text: "go", conversationId: "c", modelId: "m" }) });
    expect(r.end).toEqual({ ok: true });
    expect(appended.map((a) => [a.seqno, a.kind])).toEqual([[1n, "runRequest"], [2n, "kvClientMessage"]]);
    expect([...r.blobs.get(Buffer.from(blobId).toString("hex"))!]).toEqual([1, 2, 3]);
  });
});
