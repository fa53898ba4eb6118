// Property-based fuzzing of the edge's one request reader, as RunSSE and AgentService/Run use it:
// any bytes, any flags, lengths, chunking, truncation and gzip (including bombs) give the
// decoded messages or a ConnectError with a message in the protocol's words; nothing else is
// ever thrown, and what decodes is exactly what was sent.
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fuzzRuns, reportFuzzCases } from "@byok/testing";
import { AgentClientMessageSchema, BidiRequestIdSchema, encodeEnvelope } from "@byok/wire";
import { checkedEnvelopes, requestCompression } from "./request-messages.js";
import { MAX_RUN_SSE_MESSAGE, readRunSseRequest } from "./run-sse-request.js";

const LIBRARY_WORDING = /illegal tag|premature EOF|wire type|incorrect header|invalid UTF-8|\n\s+at /;
const idBytes = (id: string) => toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId: id }));

/** `bytes` delivered in chunks cut at `cuts` (fractions of the length). */
async function* chunked(bytes: Uint8Array, cuts: number[]): AsyncGenerator<Uint8Array> {
  const at = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b);
  let from = 0;
  for (const to of [...at, bytes.length]) {
    if (to > from) yield bytes.subarray(from, to);
    from = Math.max(from, to);
  }
}

/** The refusal as the edge demands: a Connect code the client can act on, no decoder wording. */
function expectRefusal(err: unknown) {
  expect(err).toBeInstanceOf(ConnectError);
  const e = err as ConnectError;
  expect([Code.InvalidArgument, Code.ResourceExhausted]).toContain(e.code);
  expect(e.rawMessage).not.toMatch(LIBRARY_WORDING);
  expect(e.details).toHaveLength(1);
}

const envelopeBodies = (payload: fc.Arbitrary<Uint8Array>) =>
  fc.oneof(
    fc.uint8Array({ maxLength: 80 }),
    fc.record({ flags: fc.integer({ min: 0, max: 255 }), payload: fc.uint8Array({ maxLength: 40 }), cut: fc.nat({ max: 8 }) }).map(({ flags, payload: p, cut }) => {
      const e = encodeEnvelope(flags, p);
      return e.subarray(0, e.length - Math.min(cut, e.length));
    }),
    payload.map((p) => encodeEnvelope(0, p)),
    payload.map((p) => encodeEnvelope(1, gzipSync(p))),
    fc.integer({ min: 1, max: 512 }).map((kib) => encodeEnvelope(1, gzipSync(Buffer.alloc(kib * 1024)))),
    fc.array(payload, { minLength: 2, maxLength: 3 }).map((ps) => Buffer.concat(ps.map((p) => encodeEnvelope(0, p)))),
  );

describe("fuzz: the edge's request reader", () => {
  it("RunSSE: every body gives its one request id or invalid_argument / resource_exhausted", async () => {
    const numRuns = fuzzRuns(3_000);
    await fc.assert(
      fc.asyncProperty(envelopeBodies(fc.string({ maxLength: 20 }).map(idBytes)), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 }), fc.boolean(), async (body, cuts, gzipHeader) => {
        const headers = new Headers(gzipHeader ? { "connect-content-encoding": "gzip" } : {});
        try {
          const id = await readRunSseRequest(chunked(body, cuts), headers);
          expect(id.length).toBeGreaterThan(0);
          expect(Buffer.from(body.subarray(5)).includes(Buffer.from(idBytes(id))) || body[0] === 1).toBe(true);
        } catch (err) {
          expectRefusal(err);
        }
      }),
      { numRuns },
    );
    reportFuzzCases("run_sse.body", numRuns);
  });

  it("AgentService/Run: the messages that decode are the ones sent, in order; everything else is refused", async () => {
    const numRuns = fuzzRuns(3_000);
    const message = fc.constantFrom(
      create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } }),
      create(AgentClientMessageSchema, { message: { case: "runRequest", value: { conversationId: "c" } } }),
      create(AgentClientMessageSchema, {}),
    ).map((m) => toBinary(AgentClientMessageSchema, m));
    const rules = (gzip: boolean) => ({
      input: AgentClientMessageSchema,
      binary: true,
      compression: requestCompression(new Headers(gzip ? { "connect-content-encoding": "gzip" } : {}), "connect-content-encoding"),
      readMaxBytes: 64 * 1024,
      procedure: "agent.v1.AgentService/Run",
    });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          envelopeBodies(fc.oneof(message, fc.uint8Array({ maxLength: 48 }))).map((body) => ({ body, sent: undefined })),
          fc.array(message, { minLength: 1, maxLength: 4 }).map((ms) => ({ body: Buffer.concat(ms.map((m) => encodeEnvelope(0, m))), sent: ms })),
        ),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 }),
        fc.boolean(),
        async ({ body, sent }, cuts, gzip) => {
          const got: Uint8Array[] = [];
          try {
            for await (const m of checkedEnvelopes(chunked(body, cuts), rules(gzip))) got.push(m.bytes);
          } catch (err) {
            expect(sent).toBeUndefined();
            return expectRefusal(err);
          }
          if (sent) expect(got.map((b) => Buffer.from(b).toString("hex"))).toEqual(sent.map((b) => Buffer.from(b).toString("hex")));
        },
      ),
      { numRuns },
    );
    reportFuzzCases("run.envelopes", numRuns);
  });

  it("refuses an unknown connect-content-encoding and bounds a gzip bomb by the limit", async () => {
    expect(() => requestCompression(new Headers({ "connect-content-encoding": "zstd" }), "connect-content-encoding")).toThrow(/'zstd' is not supported/);
    const bomb = encodeEnvelope(1, gzipSync(Buffer.alloc(8 * MAX_RUN_SSE_MESSAGE)));
    const err = await readRunSseRequest(chunked(bomb, []), new Headers({ "connect-content-encoding": "gzip" })).catch((e: unknown) => e);
    expectRefusal(err);
    expect((err as ConnectError).code).toBe(Code.ResourceExhausted);
    expect((err as ConnectError).rawMessage).toMatch(/decompresses to more than 65536 bytes/);
  });
});
