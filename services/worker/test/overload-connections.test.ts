// The connection limit of an ingress replica (real processes), GATEWAY_MAX_CONNECTIONS=3: with
// three connections held (an HTTP/2 session and two idle HTTP/1.1 RunSSE streams), every new
// connection is answered with a retryable `resource_exhausted` as its route answers errors —
// BidiAppend HTTP 429 + `retry-after` and `connection: close`, RunSSE an end-stream, the same
// over a new h2c session followed by GOAWAY — and closed, never left hanging; the held session
// still serves a whole turn; once a held connection closes, a new one is served again.
import { request as h1Request, type IncomingHttpHeaders } from "node:http";
import { connect as h2Connect, constants as h2, type ClientHttp2Session } from "node:http2";
import type { Socket } from "node:net";
import { randomUUID } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BIDI_APPEND_PATH, createFrameDecoder, cursorHeaders, encodeAppendBody, isHeartbeat, metricSum, parsePrometheus, RUN_SSE_PATH, runRequestMessage,
  type StreamItem,
} from "@byok/testing";
import { BidiRequestIdSchema, encodeEnvelope, ErrorDetailsSchema } from "@byok/wire";
import { SERVICE_START_MS, startTestCluster, TEST_MODEL, waitFor, type TestCluster } from "./process-harness.js";

const LIMIT = 3;
/** A refused request must be answered; one that hangs fails here instead of at the test timeout. */
const ANSWER_MS = 15_000;

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

const runSseBody = (requestId: string) => encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })));

/** One request on a new HTTP/1.1 connection of its own; `closed` settles when the server closes that connection. */
function h1Call(url: string, path: string, headers: Record<string, string>, body: Uint8Array): Promise<Answer & { closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const req = h1Request(`${url}${path}`, { method: "POST", agent: false, headers: { ...headers, "content-length": String(body.byteLength) }, signal: AbortSignal.timeout(ANSWER_MS) });
    let socket: Socket | undefined;
    req.on("socket", (s) => (socket = s));
    req.on("error", reject);
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks),
          closed: new Promise<void>((r) => (socket!.destroyed ? r() : socket!.once("close", () => r()))),
        }),
      );
    });
    req.end(body);
  });
}

/** One request on an HTTP/2 session, read to its end. */
function h2Call(session: ClientHttp2Session, method: string, path: string, headers: Record<string, string>, body?: Uint8Array): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ [h2.HTTP2_HEADER_METHOD]: method, [h2.HTTP2_HEADER_PATH]: path, ...headers });
    const timer = setTimeout(() => reject(new Error(`${path} not answered within ${ANSWER_MS} ms`)), ANSWER_MS);
    let status = 0;
    let responseHeaders: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      status = Number(h[h2.HTTP2_HEADER_STATUS]);
      responseHeaders = h as IncomingHttpHeaders;
    });
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    stream.on("end", () => {
      clearTimeout(timer);
      resolve({ status, headers: responseHeaders, body: Buffer.concat(chunks) });
    });
    stream.end(body);
  });
}

function streamItems(a: Answer): StreamItem[] {
  const decoder = createFrameDecoder(a.headers["connect-content-encoding"] as string | undefined);
  const items = decoder.push(a.body);
  decoder.finish();
  return items;
}

/** The stream ended at once with the retryable connection-limit refusal. */
function expectStreamRefusal(a: Answer): void {
  expect(a.status).toBe(200);
  const items = streamItems(a);
  expect(items).toHaveLength(1);
  const end = items[0]!;
  if (end.kind !== "end" || end.end.ok) throw new Error(`expected an error end-stream, got ${JSON.stringify(end)}`);
  expect(end.end.code).toBe("resource_exhausted");
  expect(end.end.message).toMatch(/already holds 3 connections \(GATEWAY_MAX_CONNECTIONS\); retry shortly/);
  expect(end.end.errorDetails[0]?.details?.isRetryable).toBe(true);
}

describe("overload: the connection limit of an ingress replica (real processes)", () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await startTestCluster({ ingress: 1, workers: 1, env: { GATEWAY_MAX_CONNECTIONS: String(LIMIT), GATEWAY_NOT_FOUND_WAIT_MS: "120000" } });
  }, 2 * SERVICE_START_MS);
  afterAll(async () => {
    await c?.close();
  });

  it("refuses every request of a connection past the limit with a retryable resource_exhausted and closes it; held connections keep working; a freed slot is reused", async () => {
    const url = c.ingress[0]!.url;
    const auth = { authToken: c.authToken };
    const held = h2Connect(url);
    held.on("error", () => {});
    const metrics = async () => parsePrometheus((await h2Call(held, "GET", "/metrics", {})).body.toString());
    const open = async () => metricSum(await metrics(), "byok_connections_open");
    // Connections the harness's readiness checks left in its keep-alive pool close within the
    // server's keep-alive timeout; then the held session is the only one.
    await waitFor(async () => (await open()) === 1, 30_000, "only the held HTTP/2 session open");

    // Two idle RunSSE streams over HTTP/1.1 (their requests never come): the limit is reached.
    const idle = [0, 1].map(() => {
      const requestId = `idle-${randomUUID()}`;
      const req = h1Request(`${url}${RUN_SSE_PATH}`, {
        method: "POST",
        agent: false,
        headers: { ...cursorHeaders(requestId, auth), "content-type": "application/connect+proto" },
      });
      req.on("error", () => {});
      req.end(runSseBody(requestId));
      return req;
    });
    await waitFor(async () => (await open()) === LIMIT, 30_000, `${LIMIT} connections open`);

    // A new HTTP/1.1 connection: BidiAppend answered HTTP 429 with the Connect error, then closed.
    const appendId = `refused-append-${randomUUID()}`;
    const { body, headers } = encodeAppendBody(appendId, 1, runRequestMessage({ text: "refused", conversationId: `conv-${appendId}`, modelId: TEST_MODEL }));
    const append = await h1Call(url, BIDI_APPEND_PATH, { ...cursorHeaders(appendId, auth), ...headers }, body);
    expect(append.status).toBe(429);
    expect(append.headers["retry-after"]).toBe("1");
    expect(append.headers.connection).toBe("close");
    const json = JSON.parse(append.body.toString()) as { code: string; message: string; details?: { type: string; value: string }[] };
    expect(json.code).toBe("resource_exhausted");
    expect(json.message).toMatch(/already holds 3 connections \(GATEWAY_MAX_CONNECTIONS\); retry shortly or on another replica/);
    const detail = json.details?.find((d) => d.type === "aiserver.v1.ErrorDetails");
    expect(fromBinary(ErrorDetailsSchema, Buffer.from(detail!.value, "base64")).details?.isRetryable).toBe(true);
    await append.closed;

    // A new HTTP/1.1 connection: RunSSE ends at once with the same status, then closed.
    const sseId = `refused-sse-${randomUUID()}`;
    const sse = await h1Call(url, RUN_SSE_PATH, { ...cursorHeaders(sseId, auth), "content-type": "application/connect+proto" }, runSseBody(sseId));
    expectStreamRefusal(sse);
    await sse.closed;

    // A new h2c session: its RunSSE stream ends with the same status, then the session gets GOAWAY.
    const extra = h2Connect(url);
    extra.on("error", () => {});
    const goaway = new Promise<void>((r) => extra.once("goaway", () => r()));
    const extraClosed = new Promise<void>((r) => extra.once("close", () => r()));
    const h2Id = `refused-h2-${randomUUID()}`;
    expectStreamRefusal(await h2Call(extra, "POST", RUN_SSE_PATH, { ...cursorHeaders(h2Id, auth), "content-type": "application/connect+proto" }, runSseBody(h2Id)));
    await goaway;
    await extraClosed;

    let m = await metrics();
    expect(metricSum(m, "byok_connections_refused_total")).toBe(3);
    expect(metricSum(m, "byok_connections_open")).toBe(LIMIT);

    // The held HTTP/2 session still serves a whole turn: its RunSSE and BidiAppend streams.
    c.sim.enqueue({ text: ["held ", "session ", "works"] });
    const turnId = `held-${randomUUID()}`;
    const reading = h2Call(held, "POST", RUN_SSE_PATH, { ...cursorHeaders(turnId, auth), "content-type": "application/connect+proto" }, runSseBody(turnId));
    const turn = encodeAppendBody(turnId, 1, runRequestMessage({ text: "hi", conversationId: `conv-${turnId}`, modelId: TEST_MODEL }));
    const appended = await h2Call(held, "POST", BIDI_APPEND_PATH, { ...cursorHeaders(turnId, auth), ...turn.headers }, turn.body);
    expect(appended.status).toBe(200);
    const read = streamItems(await reading);
    expect(read.at(-1)).toEqual({ kind: "end", end: { ok: true } });
    const text = read.flatMap((x) => {
      const u = x.kind === "message" && x.message.message.case === "interactionUpdate" ? x.message.message.value.message : undefined;
      return u?.case === "textDelta" ? [u.value.text] : [];
    });
    expect(text.join("")).toBe("held session works");

    // One idle stream goes away: a new connection is served again (the finished turn replayed).
    idle[0]!.destroy();
    await waitFor(async () => (await open()) === LIMIT - 1, 30_000, "a connection freed");
    const replay = await h1Call(url, RUN_SSE_PATH, { ...cursorHeaders(turnId, auth), "content-type": "application/connect+proto" }, runSseBody(turnId));
    expect(replay.status).toBe(200);
    const replayed = streamItems(replay);
    expect(replayed.at(-1)).toEqual({ kind: "end", end: { ok: true } });
    const frames = (items: StreamItem[]) => items.filter((x) => x.kind === "message" && !isHeartbeat(x.message)).length;
    expect(frames(replayed)).toBe(frames(read));
    m = await metrics();
    expect(metricSum(m, "byok_connections_refused_total")).toBe(3);

    idle[1]!.destroy();
    held.close();
  }, 120_000);
});
