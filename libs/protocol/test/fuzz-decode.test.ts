// Property-based fuzzing of the client message decoder: every oneof combination of
// AgentClientMessage (recursively, from the generated descriptors) round-trips, and any bytes —
// random, or a valid message truncated or with flipped bits — decode or are refused, never throw.
import { create, fromBinary, toBinary, type DescField, type DescMessage } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fuzzRuns, reportFuzzCases } from "@byok/testing";
import { AgentClientMessageSchema, BidiAppendRequestSchema, BidiRequestIdSchema } from "@byok/wire";
import { decodeClientMessage } from "../src/index.js";

function check<T>(name: string, ciRuns: number, arb: fc.Arbitrary<T>, predicate: (v: T) => void): void {
  const numRuns = fuzzRuns(ciRuns);
  fc.assert(fc.property(arb, predicate), { numRuns });
  reportFuzzCases(name, numRuns);
}

/** A random value for a scalar or enum field (proto3 ranges). */
function scalarArb(f: DescField & { fieldKind: "scalar" | "enum" }): fc.Arbitrary<unknown> {
  if (f.fieldKind === "enum") return fc.constantFrom(...f.enum.values.map((v) => v.number));
  switch (f.scalar) {
    case 9: // string
      return fc.string({ maxLength: 12 });
    case 12: // bytes
      return fc.uint8Array({ maxLength: 12 });
    case 8: // bool
      return fc.boolean();
    case 1: // double
    case 2: // float
      return fc.integer({ min: -1000, max: 1000 });
    case 3: // int64
    case 16: // sfixed64
    case 18: // sint64
      return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
    case 4: // uint64
    case 6: // fixed64
      return fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    case 13: // uint32
    case 7: // fixed32
      return fc.nat({ max: 0xffffffff });
    default: // int32, sint32, sfixed32
      return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
  }
}

/**
 * Messages of `desc` with one random case (or none) of each oneof, recursing into message
 * cases up to `depth`, and random scalar fields outside oneofs.
 */
function messageArb(desc: DescMessage, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const parts: Record<string, fc.Arbitrary<unknown>> = {};
  for (const oneof of desc.oneofs) {
    const cases = oneof.fields.map((f) => {
      const value =
        f.fieldKind === "message"
          ? depth > 0
            ? messageArb(f.message, depth - 1).map((v) => create(f.message, v as never))
            : fc.constant(create(f.message))
          : f.fieldKind === "scalar" || f.fieldKind === "enum"
            ? scalarArb(f)
            : fc.constant(undefined);
      return value.map((v) => ({ case: f.localName, value: v }));
    });
    parts[oneof.localName] = fc.option(fc.oneof(...cases), { nil: undefined });
  }
  for (const f of desc.fields) {
    if (f.oneof || (f.fieldKind !== "scalar" && f.fieldKind !== "enum")) continue;
    parts[f.localName] = fc.option(scalarArb(f), { nil: undefined });
  }
  return fc.record(parts).map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)));
}

const clientMessage = messageArb(AgentClientMessageSchema, 3).map((init) => create(AgentClientMessageSchema, init as never));

describe("fuzz: AgentClientMessage", () => {
  it("round-trips every oneof combination the descriptors allow", () => {
    const cases = new Set<string>();
    check("agent_client_message.roundtrip", 3_000, clientMessage, (m) => {
      cases.add(String(m.message.case));
      const bytes = toBinary(AgentClientMessageSchema, m);
      const d = decodeClientMessage(bytes);
      expect(d.ok).toBe(true);
      if (d.ok) expect(toBinary(AgentClientMessageSchema, d.message)).toEqual(bytes);
    });
    // Every top-level branch was generated.
    expect(cases.size).toBeGreaterThanOrEqual(AgentClientMessageSchema.oneofs[0]!.fields.length);
  });

  it("decodes or refuses random bytes and mutated messages, never throws", () => {
    const mutated = fc
      .record({ m: clientMessage, cut: fc.nat(), flips: fc.array(fc.record({ at: fc.nat(), bit: fc.nat({ max: 7 }) }), { maxLength: 3 }) })
      .map(({ m, cut, flips }) => {
        const b = new Uint8Array(toBinary(AgentClientMessageSchema, m));
        for (const f of flips) if (b.length) b[f.at % b.length]! ^= 1 << f.bit;
        return b.subarray(0, b.length ? cut % (b.length + 1) : 0);
      });
    check("agent_client_message.garbage", 6_000, fc.oneof(fc.uint8Array({ maxLength: 200 }), mutated), (bytes) => {
      const d = decodeClientMessage(bytes);
      if (!d.ok) expect(typeof d.reason).toBe("string");
    });
  });
});

describe("fuzz: request envelopes' messages", () => {
  it("BidiAppendRequest and BidiRequestId bodies decode or throw an Error (the edge maps it to invalid_argument)", () => {
    check("bidi_bodies.garbage", 4_000, fc.uint8Array({ maxLength: 200 }), (bytes) => {
      for (const schema of [BidiAppendRequestSchema, BidiRequestIdSchema] as const) {
        try {
          fromBinary(schema, bytes);
        } catch (err) {
          expect(err).toBeInstanceOf(Error);
        }
      }
    });
  });
});
