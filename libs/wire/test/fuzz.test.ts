// Property-based fuzzing of the wire decoders: hex and Connect envelopes (flags, lengths,
// arbitrary chunking, truncation, oversized lengths), against simple reference decoders.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fuzzRuns, reportFuzzCases } from "@byok/testing";
import { create, toBinary } from "@bufbuild/protobuf";
import {
  CustomErrorDetailsSchema, decodeHex, encodeEndStream, encodeEnvelope, encodeHex, EnvelopeReader, ENVELOPE_HEADER_BYTES, ErrorDetailsSchema, parseEndStream,
  type ConnectCodeName,
} from "../src/index.js";

/** Runs a property with the scaled number of cases and reports the count. */
function check<T>(name: string, ciRuns: number, arb: fc.Arbitrary<T>, predicate: (v: T) => void): void {
  const numRuns = fuzzRuns(ciRuns);
  fc.assert(fc.property(arb, predicate), { numRuns });
  reportFuzzCases(name, numRuns);
}

/** Reference: what strict hex decoding means, via Node's own hex codec. */
function referenceHex(text: string): Uint8Array | "odd_length" | "non_hex" {
  if (text.length % 2 !== 0) return "odd_length";
  if (!/^[0-9a-fA-F]*$/.test(text)) return "non_hex";
  return new Uint8Array(Buffer.from(text, "hex"));
}

/** Splits `bytes` at the given cut points (chunking as a network would). */
function chunked(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let at = 0;
  for (const p of points) {
    out.push(bytes.subarray(at, p));
    at = p;
  }
  out.push(bytes.subarray(at));
  return out;
}

const hexChar = fc.constantFrom(..."0123456789abcdefABCDEF");
const anyChar = fc.constantFrom(..."0123456789abcdefABCDEFgxz G-\u00e9\u0000");

describe("fuzz: hex", () => {
  it("agrees with the reference decoder on valid, odd and non-hex text", () => {
    check(
      "hex.decode",
      4_000,
      fc.oneof(fc.string({ unit: hexChar, maxLength: 64 }), fc.string({ unit: anyChar, maxLength: 64 }), fc.string({ maxLength: 32 })),
      (text) => {
        expect(decodeHex(text)).toEqual(referenceHex(text));
      },
    );
  });

  it("round-trips any bytes", () => {
    check("hex.roundtrip", 2_000, fc.uint8Array({ maxLength: 256 }), (b) => {
      expect(decodeHex(encodeHex(b))).toEqual(b);
      expect(decodeHex(encodeHex(b).toUpperCase())).toEqual(b);
    });
  });
});

const envelope = fc.record({ flags: fc.integer({ min: 0, max: 255 }), data: fc.uint8Array({ maxLength: 300 }) });

describe("fuzz: envelopes", () => {
  it("reassembles any envelopes split at any points; a truncated tail stays pending", () => {
    check(
      "envelope.chunking",
      4_000,
      fc.record({ envs: fc.array(envelope, { maxLength: 6 }), cuts: fc.array(fc.nat(), { maxLength: 8 }), cutTail: fc.nat({ max: 40 }) }),
      ({ envs, cuts, cutTail }) => {
        const whole = Buffer.concat(envs.map((e) => encodeEnvelope(e.flags, e.data)));
        const bytes = whole.subarray(0, Math.max(0, whole.length - cutTail));
        const reader = new EnvelopeReader(1024);
        const got = chunked(bytes, cuts).flatMap((c) => reader.push(c));
        // Reference: walk the bytes once.
        const want: { flags: number; data: Uint8Array }[] = [];
        let at = 0;
        while (bytes.length - at >= ENVELOPE_HEADER_BYTES) {
          const len = bytes.readUInt32BE(at + 1);
          if (bytes.length - at - ENVELOPE_HEADER_BYTES < len) break;
          want.push({ flags: bytes[at]!, data: new Uint8Array(bytes.subarray(at + ENVELOPE_HEADER_BYTES, at + ENVELOPE_HEADER_BYTES + len)) });
          at += ENVELOPE_HEADER_BYTES + len;
        }
        expect(got).toEqual(want);
        expect(reader.pendingBytes).toBe(bytes.length - at);
      },
    );
  });

  it("refuses an announced length over the limit before buffering it, whatever the chunking", () => {
    check(
      "envelope.oversized",
      2_000,
      fc.record({ len: fc.integer({ min: 1025, max: 0xffffffff }), flags: fc.integer({ min: 0, max: 255 }), cuts: fc.array(fc.nat(), { maxLength: 4 }) }),
      ({ len, flags, cuts }) => {
        const header = Buffer.alloc(ENVELOPE_HEADER_BYTES + 16);
        header[0] = flags;
        header.writeUInt32BE(len, 1);
        const reader = new EnvelopeReader(1024);
        expect(() => chunked(header, cuts).forEach((c) => reader.push(c))).toThrow(/exceeds the limit of 1024/);
      },
    );
  });

  it("parses any end-stream JSON or refuses it with a SyntaxError, never anything else", () => {
    check(
      "envelope.end_stream",
      2_000,
      fc.oneof(
        fc.json(),
        fc.string({ maxLength: 64 }),
        fc.record({ error: fc.record({ code: fc.string({ maxLength: 20 }), message: fc.string({ maxLength: 40 }) }) }).map((o) => JSON.stringify(o)),
      ),
      (text) => {
        try {
          const end = parseEndStream(new TextEncoder().encode(text));
          expect(typeof end.ok).toBe("boolean");
        } catch (err) {
          expect(err).toBeInstanceOf(SyntaxError);
        }
      },
    );
  });

  it("reads back every end-stream it encodes: code, message and the ErrorDetails bytes", () => {
    const codes: ConnectCodeName[] = ["canceled", "unknown", "invalid_argument", "not_found", "permission_denied", "resource_exhausted", "failed_precondition", "unavailable", "internal", "unauthenticated"];
    const details = fc
      .record({ error: fc.integer({ min: 0, max: 60 }), title: fc.string({ maxLength: 30 }), detail: fc.string({ maxLength: 60 }), isRetryable: fc.boolean() })
      .map(({ error, title, detail, isRetryable }) => toBinary(ErrorDetailsSchema, create(ErrorDetailsSchema, { error, details: create(CustomErrorDetailsSchema, { title, detail, isRetryable }) })));
    check(
      "envelope.end_stream_encode",
      1_000,
      fc.option(fc.record({ code: fc.constantFrom(...codes), message: fc.string({ maxLength: 80, unit: "grapheme" }), errorDetails: fc.array(details, { maxLength: 2 }) }), { nil: undefined }),
      (error) => {
        const env = encodeEndStream(error);
        expect(env[0]).toBe(0x02);
        expect(new DataView(env.buffer).getUint32(1)).toBe(env.byteLength - ENVELOPE_HEADER_BYTES);
        const end = parseEndStream(env.subarray(ENVELOPE_HEADER_BYTES));
        if (!error) {
          expect(end).toEqual({ ok: true });
          return;
        }
        expect(end.ok).toBe(false);
        if (end.ok) return;
        expect(end.code).toBe(error.code);
        expect(end.message).toBe(error.message);
        expect(end.errorDetails.map((d) => Buffer.from(toBinary(ErrorDetailsSchema, d)).toString("hex"))).toEqual(error.errorDetails.map((d) => Buffer.from(d).toString("hex")));
      },
    );
  });
});
