// The key store gone while callers arrive (a Postgres outage): every route of the edge answers
// `unavailable` with ErrorDetails and a retry hint, never HTTP 500 and never the store's own
// error text. The store is the real one (PGlite), closed under the authenticator.
import { createServer as createHttpServer, type Server } from "node:http";
import { connect, createServer as createH2Server, type Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { createMemoryBus } from "@byok/bus";
import { createStore, type GatewayStore } from "@byok/store";
import { BidiRequestIdSchema, encodeEnvelope, ErrorDetails_Error, parseEndStream, type EndStream } from "@byok/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKeyAuthenticator } from "./auth/index.js";
import { createEdgeHandler } from "./server.js";
import { testEdgeDeps } from "./test-support/edge-deps.js";

let store: GatewayStore;
let secret: string;
let http1: Server;
let h2: Http2Server;
const url = (s: Server | Http2Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

beforeAll(async () => {
  store = await createStore({ driver: "pglite" });
  await store.tenants.create({ tenantId: "acme", name: "Acme" });
  secret = (await store.apiKeys.create({ tenantId: "acme", name: "k" })).secret;
  const edge = createEdgeHandler(testEdgeDeps({
    bus: createMemoryBus({ seqnoWindow: 16, maxOutputFrames: 100, maxInputEntries: 10, finishedRetentionMs: 60_000, sequenceStateTtlMs: 60_000 }),
    dispatcher: { dispatch: async () => {}, admit: async () => undefined },
    auth: createApiKeyAuthenticator({ keys: store.apiKeys }),
  }));
  http1 = createHttpServer(edge);
  // The compatibility API's request and response are what the handler uses of node:http's.
  h2 = createH2Server(edge as unknown as Parameters<typeof createH2Server>[0]);
  await Promise.all([new Promise<void>((r) => http1.listen(0, "127.0.0.1", r)), new Promise<void>((r) => h2.listen(0, "127.0.0.1", r))]);
  // The outage: the store the keys are verified against is gone.
  await store.close();
}, 60_000);
afterAll(async () => {
  http1?.close();
  h2?.close();
});

function expectOutage(e: EndStream) {
  expect(e).toMatchObject({ ok: false, code: "unavailable" });
  if (e.ok) return;
  expect(e.message).toMatch(/could not check the credentials.*retry/);
  expect(e.errorDetails[0]?.error).toBe(ErrorDetails_Error.INTERNAL);
  expect(e.errorDetails[0]?.details?.isRetryable).toBe(true);
}

describe("edge with its key store unavailable", () => {
  const auth = () => ({ authorization: `Bearer ${secret}` });

  it("answers BidiAppend 503 unavailable with ErrorDetails, not 500 with the store's error", async () => {
    const r = await fetch(`${url(http1)}/aiserver.v1.BidiService/BidiAppend`, { method: "POST", headers: { "content-type": "application/proto", ...auth() }, body: new Uint8Array() });
    expect(r.status).toBe(503);
    const body = await r.text();
    expectOutage(parseEndStream(Buffer.from(`{"error":${body}}`)));
  });

  it("ends RunSSE and AgentService/Run at once with unavailable", async () => {
    const id = encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId: "r1" })));
    const sse = await fetch(`${url(http1)}/agent.v1.AgentService/RunSSE`, { method: "POST", headers: { "content-type": "application/connect+proto", ...auth() }, body: id });
    expect(sse.status).toBe(200);
    expectOutage(parseEndStream(new Uint8Array(await sse.arrayBuffer()).subarray(5)));

    const run = await new Promise<Buffer>((resolve, reject) => {
      const session = connect(url(h2));
      session.on("error", reject);
      const req = session.request({ ":method": "POST", ":path": "/agent.v1.AgentService/Run", "content-type": "application/connect+proto", ...auth() });
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        session.close();
        resolve(Buffer.concat(chunks));
      });
      req.on("error", reject);
      req.end();
    });
    expectOutage(parseEndStream(run.subarray(5)));
  });
});
