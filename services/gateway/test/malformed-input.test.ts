// Whatever a client sends to a Connect route ends as a 4xx Connect error with aiserver.v1.ErrorDetails
// and a message in the protocol's words: never HTTP 5xx, never a decoder's wording or a stack trace.
import { Agent, request } from "node:http";
import { connect } from "node:http2";
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { exchangeApiKey, fuzzRuns, reportFuzzCases, runOverHttp2, runRequestMessage } from "@byok/testing";
import { AgentClientMessageSchema, aiserver, BidiAppendRequestSchema, encodeEnvelope, parseEndStream, type EndStream } from "@byok/wire";
import { COMPAT_PATHS } from "@byok/compat";
import { startHarness, type Harness } from "./harness.js";

const BIDI_APPEND = "/aiserver.v1.BidiService/BidiAppend";
const RUN_SSE = "/agent.v1.AgentService/RunSSE";

interface Raw {
  status: number;
  body: Buffer;
}

function post(url: string, path: string, body: Uint8Array, headers: Record<string, string>, method = "POST"): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers: { "connect-protocol-version": "1", ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** A unary Connect error body, parsed with its ErrorDetails. */
function unaryError(r: Raw): EndStream & { ok: false } {
  const end = parseEndStream(Buffer.from(`{"error":${r.body.toString("utf8")}}`));
  if (end.ok) throw new Error(`expected an error body, got ${r.body.toString("utf8")}`);
  return end;
}

/** The end-stream of a Connect server stream that ends at once. */
function streamEnd(r: Raw): EndStream {
  expect(r.status).toBe(200);
  expect(r.body[0]).toBe(0x02);
  return parseEndStream(r.body.subarray(5));
}

/** One HTTP/2 (h2c, prior knowledge) POST, read to its end or refused after `timeoutMs`. */
function h2post(url: string, path: string, body: Uint8Array, timeoutMs = 10_000, contentType = "application/connect+proto"): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const session = connect(url);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": path, "content-type": contentType, "connect-protocol-version": "1" });
    const timer = setTimeout(() => {
      session.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    let status = 0;
    const chunks: Buffer[] = [];
    req.on("response", (h) => (status = Number(h[":status"])));
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      clearTimeout(timer);
      session.close();
      resolve({ status, body: Buffer.concat(chunks) });
    });
    req.on("error", (err) => {
      clearTimeout(timer);
      session.destroy();
      reject(err);
    });
    req.end(body);
  });
}

/** The last envelope of a Connect stream body, parsed as its end-stream. */
function lastEndStream(body: Buffer): EndStream | undefined {
  let at = 0;
  let end: EndStream | undefined;
  while (body.length - at >= 5) {
    const len = body.readUInt32BE(at + 1);
    if (body[at] === 0x02) end = parseEndStream(body.subarray(at + 5, at + 5 + len));
    at += 5 + len;
  }
  return end;
}

const LIBRARY_WORDING = /illegal tag|premature EOF|wire type|invalid UTF-8|cannot decode|Unexpected token|\n\s+at /;

/** A client-fault refusal as the issue demands: 4xx, a Connect code, ErrorDetails, words a person can act on. */
function expectClientFault(e: EndStream & { ok: false }, codes: string[]) {
  expect(codes).toContain(e.code);
  expect(e.errorDetails).toHaveLength(1);
  expect(e.errorDetails[0]!.details?.detail).toBe(e.message);
  expect(e.message).not.toMatch(LIBRARY_WORDING);
}

describe("malformed input on every Connect route", () => {
  let h: Harness;
  const ADMIN_KEY = "admin-key-for-malformed-input-0123456789";
  beforeAll(async () => {
    h = await startHarness({ GATEWAY_ADMIN_KEY: ADMIN_KEY });
  });
  afterAll(async () => h.close());

  it("answers random BidiAppend bodies (proto, JSON, gzip, random payloads) with 4xx invalid_argument, never 5xx", async () => {
    let refused = 0;
    const numRuns = fuzzRuns(400);
    // A well-formed BidiAppendRequest whose payload is random bytes (hex or binary).
    const randomPayload = fc.record({ payload: fc.uint8Array({ minLength: 1, maxLength: 64 }), hex: fc.boolean(), seqno: fc.bigInt({ min: -3n, max: 40n }) }).map(({ payload, hex, seqno }) =>
      toBinary(BidiAppendRequestSchema, create(BidiAppendRequestSchema, {
        requestId: { requestId: `fuzz-${Buffer.from(payload).toString("hex").slice(0, 12)}` },
        appendSeqno: seqno,
        ...(hex ? { data: Buffer.from(payload).toString("hex") } : { dataBinary: payload }),
      })),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 256 }).map((b) => ({ body: b, type: "application/proto", gzip: false })),
          fc.string({ maxLength: 200 }).map((s) => ({ body: Buffer.from(s), type: "application/json", gzip: false })),
          fc.json().map((s) => ({ body: Buffer.from(s), type: "application/json", gzip: false })),
          fc.uint8Array({ maxLength: 256 }).map((b) => ({ body: gzipSync(b), type: "application/proto", gzip: true })),
          fc.uint8Array({ maxLength: 64 }).map((b) => ({ body: b, type: "application/proto", gzip: true })),
          randomPayload.map((b) => ({ body: b, type: "application/proto", gzip: false })),
        ),
        async ({ body, type, gzip }) => {
          const r = await post(h.gw.url, BIDI_APPEND, body, { "content-type": type, ...(gzip ? { "content-encoding": "gzip" } : {}) });
          expect(r.status).toBeLessThan(500);
          if (r.status === 200) return;
          expect(r.status).toBeGreaterThanOrEqual(400);
          refused++;
          expectClientFault(unaryError(r), ["invalid_argument", "resource_exhausted"]);
        },
      ),
      { numRuns },
    );
    reportFuzzCases("http.bidi_append", numRuns);
    expect(refused).toBeGreaterThan(numRuns / 2);
  });

  it("answers random bodies on every control-plane procedure without a 5xx, refusals as Connect errors with ErrorDetails", async () => {
    const procedures = [aiserver.AiService, aiserver.AnalyticsService, aiserver.DashboardService, aiserver.ServerConfigService].flatMap((svc) =>
      svc.methods.filter((m) => m.methodKind === "unary").map((m) => `/${svc.typeName}/${m.name}`),
    );
    expect(procedures.length).toBeGreaterThan(3);
    const numRuns = fuzzRuns(150);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...procedures), fc.uint8Array({ maxLength: 128 }), fc.constantFrom("application/proto", "application/json"), async (path, body, type) => {
        const r = await post(h.gw.url, path, body, { "content-type": type });
        expect(r.status, `${path} ${r.body.toString("utf8")}`).toBeLessThan(500);
        if (r.status === 200) return;
        const e = unaryError(r);
        expect(e.errorDetails, `${path} ${r.body.toString("utf8")}`).toHaveLength(1);
        expect(e.message).not.toMatch(LIBRARY_WORDING);
      }),
      { numRuns },
    );
    reportFuzzCases("http.control_plane", numRuns);
  });

  it("answers random bodies on the OpenAI/Anthropic-compatible endpoints and the admin API without a 5xx", async () => {
    const numRuns = fuzzRuns(150);
    const targets = [
      ...COMPAT_PATHS.map((p) => ({ path: p, auth: {} as Record<string, string> })),
      { path: "/admin/v1/tenants", auth: { authorization: `Bearer ${ADMIN_KEY}` } },
      { path: "/admin/v1/tenants/default/keys", auth: { authorization: `Bearer ${ADMIN_KEY}` } },
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...targets),
        fc.oneof(fc.uint8Array({ maxLength: 128 }).map((b) => Buffer.from(b)), fc.json().map((j) => Buffer.from(j)), fc.string({ maxLength: 64 }).map((t) => Buffer.from(t))),
        async ({ path, auth }, body) => {
          const r = await post(h.gw.url, path, body, { "content-type": "application/json", ...auth });
          expect(r.status, `${path} ${r.body.toString("utf8").slice(0, 200)}`).toBeLessThan(500);
          if (r.status >= 400) expect(r.body.toString("utf8")).not.toMatch(/\n\s+at |Unexpected token/);
        },
      ),
      { numRuns },
    );
    reportFuzzCases("http.compat_admin", numRuns);
  });

  it("answers random AgentService/Run bodies over HTTP/2 without a 5xx, refusals in the end-stream with ErrorDetails", async () => {
    const numRuns = fuzzRuns(60);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 96 }),
          fc.record({ flags: fc.integer({ min: 0, max: 255 }), payload: fc.uint8Array({ maxLength: 48 }) }).map(({ flags, payload }) => encodeEnvelope(flags, payload)),
          fc.uint8Array({ minLength: 1, maxLength: 48 }).map((p) => encodeEnvelope(0, p)),
        ),
        async (body) => {
          const r = await h2post(h.gw.url, "/agent.v1.AgentService/Run", body);
          expect(r.status).toBeLessThan(500);
          if (r.status !== 200) return expectClientFault(unaryError(r), ["invalid_argument", "resource_exhausted", "unauthenticated"]);
          const end = lastEndStream(r.body);
          expect(end, r.body.toString("hex").slice(0, 200)).toBeDefined();
          if (end && !end.ok && end.code !== "not_found") expectClientFault(end, ["invalid_argument", "resource_exhausted"]);
        },
      ),
      { numRuns },
    );
    reportFuzzCases("http2.run", numRuns);
  });

  it("ends every malformed AgentService/Run at once with invalid_argument or resource_exhausted, and keeps serving", async () => {
    const RUN = "/agent.v1.AgentService/Run";
    const heartbeat = toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } }));
    const cases: { name: string; body: Uint8Array; code: string; message: RegExp }[] = [
      // The body the property test found hanging: field 11 (unknown), so no run ever started.
      { name: "no known field", body: Buffer.from("00000000 03da0000".replace(/ /g, ""), "hex"), code: "invalid_argument", message: /first .*run_request or prewarm_request; this one sets no/ },
      { name: "first message not a run_request", body: encodeEnvelope(0, heartbeat), code: "invalid_argument", message: /this one is a client_heartbeat/ },
      { name: "no message at all", body: new Uint8Array(), code: "invalid_argument", message: /ended before its first message/ },
      { name: "undecodable payload", body: encodeEnvelope(0, Buffer.from([0x0a, 0x05, 0x01])), code: "invalid_argument", message: /not a valid agent\.v1\.AgentClientMessage/ },
      { name: "truncated envelope", body: encodeEnvelope(0, heartbeat).subarray(0, 4), code: "invalid_argument", message: /ended inside an envelope/ },
      { name: "oversized length", body: Buffer.from([0, 0x7f, 0xff, 0xff, 0xff]), code: "resource_exhausted", message: /the limit is \d+ bytes/ },
      { name: "compressed without encoding", body: encodeEnvelope(1, gzipSync(heartbeat)), code: "invalid_argument", message: /connect-content-encoding: gzip/ },
      { name: "end-stream flag from the client", body: encodeEnvelope(2, heartbeat), code: "invalid_argument", message: /flags 0x2/ },
    ];
    for (const c of cases) {
      const r = await h2post(h.gw.url, RUN, c.body);
      expect(r.status, c.name).toBe(200);
      const end = lastEndStream(r.body);
      expect(end?.ok, c.name).toBe(false);
      if (!end || end.ok) continue;
      expect(end.code, `${c.name}: ${end.message}`).toBe(c.code);
      expect(end.message, c.name).toMatch(c.message);
      expectClientFault(end, [c.code]);
    }
    const json = await h2post(h.gw.url, RUN, Buffer.from("{}"), 10_000, "application/json");
    expect(json.status).toBe(415);
    expect(unaryError(json).message).toMatch(/application\/connect\+proto/);
    // Still serving: a well-formed Run on the same port runs its turn.
    const s = await exchangeApiKey(h.gw.url, "any-key-after-malformed-runs");
    h.sim.enqueue({ text: "still serving" });
    const ok = await runOverHttp2({ baseUrl: h.gw.url, token: s.accessToken, requestId: "malformed-then-ok", message: runRequestMessage({ text: "hi", conversationId: "c-malformed-ok", modelId: "test-model" }) });
    expect(ok.error).toBeUndefined();
    expect(ok.textDeltas).toBe("still serving");
  });

  it("names the content types BidiAppend takes when another one is sent", async () => {
    for (const type of ["text/plain", "application/connect+proto", ""]) {
      const r = await post(h.gw.url, BIDI_APPEND, Buffer.from("x"), type ? { "content-type": type } : {});
      expect(r.status).toBe(415);
      const e = unaryError(r);
      expectClientFault(e, ["invalid_argument"]);
      expect(e.message).toMatch(/application\/proto or application\/json/);
    }
  });

  it("refuses an unknown content-encoding, bad gzip and a gzip bomb", async () => {
    const zstd = await post(h.gw.url, BIDI_APPEND, Buffer.from("x"), { "content-type": "application/proto", "content-encoding": "zstd" });
    expect(zstd.status).toBe(400);
    expect(unaryError(zstd).message).toMatch(/content-encoding 'zstd' is not supported/);

    const bad = await post(h.gw.url, BIDI_APPEND, Buffer.from("not gzip"), { "content-type": "application/proto", "content-encoding": "gzip" });
    expect(bad.status).toBe(400);
    expectClientFault(unaryError(bad), ["invalid_argument"]);

    // 64 MiB of zeros compress to ~64 KiB: refused while decompressing, never inflated in full.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    const r = await post(h.gw.url, BIDI_APPEND, bomb, { "content-type": "application/proto", "content-encoding": "gzip" });
    expect(r.status).toBe(429);
    const e = unaryError(r);
    expectClientFault(e, ["resource_exhausted"]);
    expect(e.message).toMatch(/decompresses to more than \d+ bytes/);
  });

  it("refuses a declared body over the limit before reading it", async () => {
    const r = await new Promise<Raw>((resolve, reject) => {
      const req = request(`${h.gw.url}${BIDI_APPEND}`, {
        method: "POST",
        headers: { "content-type": "application/proto", "content-length": String(1 << 30) },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      });
      req.on("error", reject);
      // connect-node drains up to 256 KiB of an unread body before answering (HTTP/1 cannot stop one request).
      req.write(Buffer.alloc(512 * 1024));
    });
    expect(r.status).toBe(429);
    expectClientFault(unaryError(r), ["resource_exhausted"]);
  });

  it("refuses a chunked body (no content-length) once it passes the limit, and keeps the connection's next call", async () => {
    // The unary path reads Node's request itself (connect-edge.ts serveUnary): past the limit it
    // stops reading and answers, and the rest of the body is drained, not parsed.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const r = await new Promise<Raw>((resolve, reject) => {
        const req = request(`${h.gw.url}${BIDI_APPEND}`, { method: "POST", agent, headers: { "content-type": "application/proto" } }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        });
        req.on("error", reject);
        for (let i = 0; i < 8; i++) req.write(Buffer.alloc(64 * 1024));
        req.end();
      });
      expect(r.status).toBe(429);
      const e = unaryError(r);
      expectClientFault(e, ["resource_exhausted"]);
      expect(e.message).toMatch(/BidiAppend body is over \d+ bytes/);
      const next = await post(h.gw.url, BIDI_APPEND, new Uint8Array([0xff]), { "content-type": "application/proto" });
      expect(next.status).toBe(400);
      expectClientFault(unaryError(next), ["invalid_argument"]);
    } finally {
      agent.destroy();
    }
  });

  it("passes a gRPC-web BidiAppend to connect-node, which reaches the same procedure", async () => {
    const message = toBinary(BidiAppendRequestSchema, create(BidiAppendRequestSchema, { requestId: { requestId: "grpc-web-1" }, appendSeqno: 0n }));
    const r = await post(h.gw.url, BIDI_APPEND, encodeEnvelope(0, message), { "content-type": "application/grpc-web+proto" });
    expect(r.status).toBe(200);
    // The trailers come as an envelope flagged 0x80: the procedure's own refusal, as gRPC status 3.
    let trailer = "";
    for (let at = 0; at + 5 <= r.body.length; at += 5 + r.body.readUInt32BE(at + 1)) {
      if (r.body[at] === 0x80) trailer = r.body.subarray(at + 5, at + 5 + r.body.readUInt32BE(at + 1)).toString("utf8");
    }
    expect(trailer).toMatch(/grpc-status: ?3\b/);
    expect(decodeURIComponent(/grpc-message: ?([^\r\n]*)/.exec(trailer)?.[1] ?? "")).toMatch(/no payload/);
  });

  it("keeps serving after a client leaves in the middle of a BidiAppend body", async () => {
    await new Promise<void>((resolve) => {
      const req = request(`${h.gw.url}${BIDI_APPEND}`, { method: "POST", headers: { "content-type": "application/proto", "content-length": "1000" } });
      req.on("error", () => resolve());
      req.write(Buffer.alloc(100), () => setTimeout(() => req.destroy(), 50));
      req.on("close", () => resolve());
    });
    const body = toBinary(BidiAppendRequestSchema, create(BidiAppendRequestSchema, { requestId: { requestId: "left-mid-body" }, appendSeqno: 0n }));
    const r = await post(h.gw.url, BIDI_APPEND, body, { "content-type": "application/proto" });
    expect(r.status).toBe(400);
    expect(unaryError(r).message).toMatch(/no payload/);
  });

  it("answers a wrong HTTP method and an unknown procedure with Connect errors", async () => {
    const get = await post(h.gw.url, BIDI_APPEND, new Uint8Array(), {}, "PUT");
    expect(get.status).toBe(405);
    expectClientFault(unaryError(get), ["invalid_argument"]);
    const unknown = await post(h.gw.url, "/agent.v1.NoSuchService/NoSuchThing", new Uint8Array(), { "content-type": "application/proto" });
    expect(unknown.status).toBe(404);
    expectClientFault(unaryError(unknown), ["not_found"]);
    // An aiserver.v1 procedure the gateway does not serve is Connect's `unimplemented` (docs/control-plane.md).
    const unserved = await post(h.gw.url, "/aiserver.v1.BidiService/NoSuchThing", new Uint8Array(), { "content-type": "application/proto" });
    expect(unserved.status).toBe(501);
    expectClientFault(unaryError(unserved), ["unimplemented"]);
  });

  it("answers random RunSSE bodies with an end-stream invalid_argument carrying ErrorDetails", async () => {
    const numRuns = fuzzRuns(200);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 128 }),
          fc.record({ flags: fc.integer({ min: 0, max: 255 }), payload: fc.uint8Array({ maxLength: 64 }) }).map(({ flags, payload }) => encodeEnvelope(flags, payload)),
          fc.uint8Array({ maxLength: 64 }).map((p) => encodeEnvelope(0, p).subarray(0, Math.max(0, p.length))),
        ),
        async (body) => {
          const r = await post(h.gw.url, RUN_SSE, body, { "content-type": "application/connect+proto", "x-cursor-streaming": "true" });
          const end = streamEnd(r);
          // A body that happens to be a valid BidiRequestId names a request that never appears.
          if (!end.ok && end.code === "not_found") return;
          expect(end.ok).toBe(false);
          if (!end.ok) expectClientFault(end, ["invalid_argument", "resource_exhausted"]);
        },
      ),
      { numRuns },
    );
    reportFuzzCases("http.run_sse", numRuns);
  });

  it("refuses a RunSSE with a wrong content type, an oversized body and a compressed body without its encoding", async () => {
    const json = await post(h.gw.url, RUN_SSE, Buffer.from("{}"), { "content-type": "application/json" });
    expect(json.status).toBe(415);
    expect(unaryError(json).message).toMatch(/application\/connect\+proto/);

    const big = streamEnd(await post(h.gw.url, RUN_SSE, encodeEnvelope(0, new Uint8Array(70_000)), { "content-type": "application/connect+proto" }));
    expect(big.ok).toBe(false);
    if (!big.ok) expectClientFault(big, ["resource_exhausted"]);

    const gz = streamEnd(await post(h.gw.url, RUN_SSE, encodeEnvelope(1, gzipSync(Buffer.from([0x0a, 0x01, 0x61]))), { "content-type": "application/connect+proto" }));
    expect(gz.ok).toBe(false);
    if (!gz.ok) expect(gz.message).toMatch(/connect-content-encoding: gzip/);

    const bomb = encodeEnvelope(1, gzipSync(Buffer.alloc(8 * 1024 * 1024)));
    const b = streamEnd(await post(h.gw.url, RUN_SSE, bomb, {
      "content-type": "application/connect+proto",
      "connect-content-encoding": "gzip",
    }));
    expect(b.ok).toBe(false);
    if (!b.ok) expectClientFault(b, ["resource_exhausted"]);
  });
});
