// A whole turn over raw HTTP/1.1, decoding envelopes and end-stream JSON by hand, independent
// of the project's own framing code (only the generated protobuf types are shared).
import { createHash } from "node:crypto";
import { request, type IncomingMessage } from "node:http";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AgentClientMessageSchema, AgentMode, AgentServerMessageSchema, BidiAppendRequestSchema, BidiRequestIdSchema,
  ConversationTurnStructureSchema, type AgentServerMessage,
} from "@byok/wire";
import { GATEWAY_PROVIDER_KEY, startHarness, TEST_MODEL, type Harness } from "./harness.js";

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function post(url: string, path: string, headers: Record<string, string>, body: Uint8Array): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: "POST", headers: { ...headers, "content-length": String(body.byteLength) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Hand-written Connect envelope parser: [flags:u8][len:u32 BE][payload]. */
function parseEnvelopes(body: Buffer): { flags: number; payload: Buffer }[] {
  const out = [];
  let off = 0;
  while (off < body.length) {
    if (off + 5 > body.length) throw new Error("truncated envelope header");
    const flags = body[off]!;
    const len = body.readUInt32BE(off + 1);
    if (off + 5 + len > body.length) throw new Error("truncated envelope payload");
    out.push({ flags, payload: body.subarray(off + 5, off + 5 + len) });
    off += 5 + len;
  }
  return out;
}

function envelope(flags: number, payload: Uint8Array): Buffer {
  const h = Buffer.alloc(5);
  h[0] = flags;
  h.writeUInt32BE(payload.byteLength, 1);
  return Buffer.concat([h, payload]);
}

const cursorHeaders = (requestId: string) => ({
  authorization: "Bearer cursor-user-token",
  "x-request-id": requestId,
  "x-original-request-id": requestId,
  "x-cursor-client-type": "ide",
  "x-cursor-client-version": "2.0.0",
  "x-cursor-streaming": "true",
  "x-ghost-mode": "false",
  "connect-protocol-version": "1",
});

const runSseHeaders = (requestId: string) => ({
  ...cursorHeaders(requestId),
  "content-type": "application/connect+proto",
  "accept-encoding": "gzip,br",
});

function runSse(url: string, requestId: string): Promise<RawResponse> {
  const body = envelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })));
  return post(url, "/agent.v1.AgentService/RunSSE", runSseHeaders(requestId), body);
}

/**
 * RunSSE read as it arrives, envelope by envelope (hand-parsed), calling `onEnvelope` for each
 * so the test can answer the server (e.g. KV set_blob_args) while the stream is open.
 */
function runSseLive(
  url: string,
  requestId: string,
  onEnvelope: (flags: number, payload: Buffer) => Promise<void>,
  onHead?: (res: IncomingMessage) => void,
): Promise<RawResponse> {
  const body = envelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })));
  return new Promise((resolve, reject) => {
    const req = request(`${url}/agent.v1.AgentService/RunSSE`, { method: "POST", headers: { ...runSseHeaders(requestId), "content-length": String(body.byteLength) } }, (res) => {
      onHead?.(res);
      const all: Buffer[] = [];
      let pending = Buffer.alloc(0);
      let chain = Promise.resolve();
      res.on("data", (c: Buffer) => {
        all.push(c);
        pending = Buffer.concat([pending, c]);
        while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
          const len = pending.readUInt32BE(1);
          const flags = pending[0]!;
          const payload = pending.subarray(5, 5 + len);
          pending = pending.subarray(5 + len);
          chain = chain.then(() => onEnvelope(flags, payload));
        }
      });
      res.on("end", () => void chain.then(() => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(all) }), reject));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

function append(url: string, requestId: string, seqno: number, messageBytes: Uint8Array): Promise<RawResponse> {
  const body = toBinary(
    BidiAppendRequestSchema,
    create(BidiAppendRequestSchema, { data: Buffer.from(messageBytes).toString("hex"), requestId: { requestId }, appendSeqno: BigInt(seqno) }),
  );
  return post(url, "/aiserver.v1.BidiService/BidiAppend", { ...cursorHeaders(requestId), "content-type": "application/proto" }, body);
}

const runRequest = (text: string) =>
  toBinary(
    AgentClientMessageSchema,
    create(AgentClientMessageSchema, {
      message: {
        case: "runRequest",
        value: {
          conversationId: "conv-raw-1",
          runId: "run-1",
          action: { action: { case: "userMessageAction", value: { userMessage: { text, messageId: "msg-1", mode: AgentMode.AGENT } } } },
          requestedModel: { modelId: TEST_MODEL },
        },
      },
    }),
  );
const heartbeat = toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } }));

function kind(m: AgentServerMessage): string {
  return m.message.case === "interactionUpdate" ? `update.${m.message.value.message.case}` : String(m.message.case);
}

describe("a whole turn over raw HTTP/1.1", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  it("streams checkpoints, thinking, text and turn_ended with the simulator's usage; a second RunSSE replays it", async () => {
    h.sim.enqueue({
      reasoning: ["Let me ", "think."],
      text: ["Hello", ", ", "world!"],
      usage: { inputTokens: 40, outputTokens: 12, cacheReadTokens: 8, reasoningTokens: 3 },
    });
    const requestId = "raw-req-1";
    // Cursor opens RunSSE first, then appends without waiting; it stores checkpoint blobs
    // (kv set_blob_args) and acknowledges each with set_blob_result on the next seqno.
    let nextSeqno = 4;
    const clientBlobs = new Map<string, Buffer>();
    const stream = runSseLive(h.gw.url, requestId, async (flags, payload) => {
      if (flags !== 0) return;
      const m = fromBinary(AgentServerMessageSchema, payload);
      if (m.message.case !== "kvServerMessage" || m.message.value.message.case !== "setBlobArgs") return;
      const args = m.message.value.message.value;
      clientBlobs.set(Buffer.from(args.blobId).toString("hex"), Buffer.from(args.blobData));
      const ack = toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, {
        message: { case: "kvClientMessage", value: { id: m.message.value.id, message: { case: "setBlobResult", value: {} } } },
      }));
      const r = await append(h.gw.url, requestId, nextSeqno++, ack);
      expect(r.status).toBe(200);
    });
    // Shuffled and duplicated seqnos: 3, 2, 2, 1, 3 → delivered once each as 1, 2, 3.
    const acks = [];
    for (const [seq, msg] of [[3, heartbeat], [2, heartbeat], [2, heartbeat], [1, runRequest("Say hello")], [3, heartbeat]] as const) {
      acks.push(await append(h.gw.url, requestId, seq, msg));
    }
    for (const a of acks) {
      expect(a.status).toBe(200);
      expect(a.headers["content-type"]).toBe("application/proto");
      expect(a.body.byteLength).toBe(0); // empty BidiAppendResponse
    }
    const res = await stream;
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("text/event-stream");
    expect(res.headers["cache-control"]).toBe("no-cache");
    expect(res.headers["content-encoding"]).toBeUndefined();

    const envs = parseEnvelopes(res.body);
    const last = envs.at(-1)!;
    expect(last.flags).toBe(0x02);
    expect(JSON.parse(last.payload.toString("utf8"))).toEqual({});
    const data = envs.slice(0, -1);
    for (const e of data) expect(e.flags).toBe(0x00);
    const msgs = data
      .map((e) => fromBinary(AgentServerMessageSchema, e.payload))
      .filter((m) => kind(m) !== "update.heartbeat" && kind(m) !== "kvServerMessage");
    // Consecutive deltas of one kind may arrive merged (delta coalescing), so the order is
    // checked over runs of a kind and the text of each run separately.
    expect(msgs.map(kind).filter((k, i, all) => i === 0 || all[i - 1] !== k)).toEqual([
      "conversationCheckpointUpdate",
      "update.thinkingDelta",
      "update.thinkingCompleted",
      "update.textDelta",
      "conversationCheckpointUpdate",
      "update.turnEnded",
    ]);
    const thinking = msgs
      .map((m) => (m.message.case === "interactionUpdate" && m.message.value.message.case === "thinkingDelta" ? m.message.value.message.value.text : ""))
      .join("");
    expect(thinking).toBe("Let me think.");
    const text = msgs
      .map((m) => (m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta" ? m.message.value.message.value.text : ""))
      .join("");
    expect(text).toBe("Hello, world!");
    const ended = msgs.at(-1)!;
    if (ended.message.case !== "interactionUpdate" || ended.message.value.message.case !== "turnEnded") throw new Error("no turn_ended");
    // Normalized: the simulator reports prompt_tokens 48 with 8 cached; input excludes cache reads.
    expect(h.sim.requests[0]!.outcome).toBeDefined();
    expect(ended.message.value.message.value).toMatchObject({
      inputTokens: 40n, outputTokens: 12n, cacheReadTokens: 8n, cacheWriteTokens: 0n, reasoningTokens: 3n,
    });
    const finalCheckpoint = msgs.at(-2)!; // the last checkpoint, just before turn_ended
    if (finalCheckpoint.message.case !== "conversationCheckpointUpdate") throw new Error("no checkpoint");
    // The checkpoint references its turn by blob id (SHA-256 of the blob), sent to the client first.
    const turnId = Buffer.from(finalCheckpoint.message.value.turns.at(-1)!);
    expect(turnId.length).toBe(32);
    const turnBlob = clientBlobs.get(turnId.toString("hex"))!;
    expect(createHash("sha256").update(turnBlob).digest()).toEqual(turnId);
    const turn = fromBinary(ConversationTurnStructureSchema, turnBlob);
    expect(turn.turn.case).toBe("agentConversationTurn");
    if (turn.turn.case !== "agentConversationTurn") return;
    expect(turn.turn.value.steps).toHaveLength(2); // thinking + assistant message

    // The provider saw exactly one request, with the gateway's key and the user's text.
    expect(h.sim.requests).toHaveLength(1);
    expect(JSON.stringify(h.sim.requests[0]!.body)).toContain("Say hello");

    // A second RunSSE on the same request replays the same frames.
    const again = await runSse(h.gw.url, requestId);
    const replay = parseEnvelopes(again.body);
    expect(replay.map((e) => [e.flags, e.payload.toString("hex")])).toEqual(envs.map((e) => [e.flags, e.payload.toString("hex")]));
  });

  it("sends the RunSSE response head at once, so a client may await it before its first append", async () => {
    h.sim.enqueue({ text: "head first", usage: { inputTokens: 1, outputTokens: 2 } });
    const requestId = "raw-req-head-first";
    let nextSeqno = 2;
    let envelopesSeen = 0;
    let head!: (res: IncomingMessage) => void;
    const headArrived = new Promise<IncomingMessage>((resolve) => (head = resolve));
    const stream = runSseLive(h.gw.url, requestId, async (flags, payload) => {
      envelopesSeen++;
      if (flags !== 0) return;
      const m = fromBinary(AgentServerMessageSchema, payload);
      if (m.message.case !== "kvServerMessage" || m.message.value.message.case !== "setBlobArgs") return;
      const ack = toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, {
        message: { case: "kvClientMessage", value: { id: m.message.value.id, message: { case: "setBlobResult", value: {} } } },
      }));
      expect((await append(h.gw.url, requestId, nextSeqno++, ack)).status).toBe(200);
    }, head);
    // No frame exists yet (no append, heartbeats every 60 s): the head must not wait for one.
    const res = await headArrived;
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/event-stream");
    expect(res.complete).toBe(false);
    expect(envelopesSeen).toBe(0);
    // Only now the first append: the turn streams on the already-open response.
    expect((await append(h.gw.url, requestId, 1, runRequest("hi"))).status).toBe(200);
    const envs = parseEnvelopes((await stream).body);
    expect(JSON.parse(envs.at(-1)!.payload.toString("utf8"))).toEqual({});
    const text = envs
      .filter((e) => e.flags === 0)
      .map((e) => fromBinary(AgentServerMessageSchema, e.payload))
      .map((m) => (m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta" ? m.message.value.message.value.text : ""))
      .join("");
    expect(text).toBe("head first");
  });

  it("keeps the gateway's provider key out of every frame", async () => {
    h.sim.enqueue({ text: "ok", usage: { inputTokens: 1, outputTokens: 1 } });
    const requestId = "raw-req-secret";
    const stream = runSse(h.gw.url, requestId);
    await append(h.gw.url, requestId, 1, runRequest("hi"));
    const res = await stream;
    expect(res.body.includes(Buffer.from(GATEWAY_PROVIDER_KEY))).toBe(false);
  });
});
