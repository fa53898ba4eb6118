// Property-based fuzzing of the RunSSE body check: any bytes, any flags, lengths, truncation and
// gzip (including bombs) give the request id or a ConnectError with a message in the protocol's
// words; it never throws.
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fuzzRuns, reportFuzzCases } from "@byok/testing";
import { BidiRequestIdSchema, encodeEnvelope } from "@byok/wire";
import { runSseRequestId } from "./run-sse-body.js";

const idBytes = (id: string) => toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId: id }));

describe("fuzz: RunSSE body", () => {
  it("answers every body with the request id or invalid_argument / resource_exhausted", () => {
    const body = fc.oneof(
      fc.uint8Array({ maxLength: 80 }).map((b) => Buffer.from(b)),
      fc.record({ flags: fc.integer({ min: 0, max: 255 }), payload: fc.uint8Array({ maxLength: 40 }), cut: fc.nat({ max: 8 }) }).map(({ flags, payload, cut }) => {
        const e = Buffer.from(encodeEnvelope(flags, payload));
        return e.subarray(0, e.length - Math.min(cut, e.length));
      }),
      fc.string({ maxLength: 20 }).map((id) => Buffer.from(encodeEnvelope(0, idBytes(id)))),
      fc.string({ maxLength: 20 }).map((id) => Buffer.from(encodeEnvelope(1, gzipSync(idBytes(id))))),
      fc.integer({ min: 1, max: 512 }).map((kib) => Buffer.from(encodeEnvelope(1, gzipSync(Buffer.alloc(kib * 1024))))),
    );
    const numRuns = fuzzRuns(3_000);
    fc.assert(
      fc.property(body, fc.boolean(), (b, gzipHeader) => {
        const r = runSseRequestId(b, new Headers(gzipHeader ? { "connect-content-encoding": "gzip" } : {}));
        if (r.ok) {
          expect(r.requestId.length).toBeGreaterThan(0);
          return;
        }
        expect([Code.InvalidArgument, Code.ResourceExhausted]).toContain(r.error.code);
        expect(r.error.rawMessage).not.toMatch(/illegal tag|premature EOF|wire type|incorrect header|\n\s+at /);
      }),
      { numRuns },
    );
    reportFuzzCases("run_sse.body", numRuns);
  });
});
