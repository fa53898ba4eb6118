import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  decodeHex, encodeHex, encodeEnvelope, encodeEndStream, EnvelopeReader, parseEndStream,
  ErrorDetailsSchema, CustomErrorDetailsSchema, ErrorDetails_Error,
} from "../src/index.js";

describe("hex", () => {
  it("round-trips and accepts upper case", () => {
    const b = new Uint8Array([0, 1, 0xab, 0xff]);
    expect(encodeHex(b)).toBe("0001abff");
    expect(decodeHex("0001ABFF")).toEqual(b);
  });
  it("refuses odd length and non-hex", () => {
    expect(decodeHex("abc")).toBe("odd_length");
    expect(decodeHex("zz")).toBe("non_hex");
    expect(decodeHex("0x")).toBe("non_hex");
  });
});

describe("envelopes", () => {
  it("reassembles envelopes split across chunks", () => {
    const a = encodeEnvelope(0, new Uint8Array([1, 2, 3]));
    const b = encodeEnvelope(2, new TextEncoder().encode("{}"));
    const all = new Uint8Array([...a, ...b]);
    const r = new EnvelopeReader();
    const out = [...r.push(all.slice(0, 4)), ...r.push(all.slice(4, 9)), ...r.push(all.slice(9))];
    expect(out).toEqual([
      { flags: 0, data: new Uint8Array([1, 2, 3]) },
      { flags: 2, data: new TextEncoder().encode("{}") },
    ]);
    expect(r.pendingBytes).toBe(0);
  });
  it("refuses an envelope over the limit", () => {
    const r = new EnvelopeReader(2);
    expect(() => r.push(encodeEnvelope(0, new Uint8Array(3)))).toThrow(/exceeds/);
  });
});

describe("end-stream", () => {
  it("parses success and errors with ErrorDetails", () => {
    expect(parseEndStream(new TextEncoder().encode("{}"))).toEqual({ ok: true });
    const detail = toBinary(ErrorDetailsSchema, create(ErrorDetailsSchema, {
      error: ErrorDetails_Error.PROVIDER_ERROR,
      details: create(CustomErrorDetailsSchema, { title: "t", detail: "d" }),
    }));
    const value = Buffer.from(detail).toString("base64").replace(/=+$/, "");
    const parsed = parseEndStream(new TextEncoder().encode(JSON.stringify({
      error: { code: "unavailable", message: "m", details: [{ type: "aiserver.v1.ErrorDetails", value }] },
    })));
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.code).toBe("unavailable");
    expect(parsed.errorDetails[0]?.error).toBe(ErrorDetails_Error.PROVIDER_ERROR);
    expect(parsed.errorDetails[0]?.details?.title).toBe("t");
  });
  it("encodes the end-stream envelope that parseEndStream reads back, the ErrorDetails bytes as they were", () => {
    const ok = encodeEndStream();
    expect([...ok]).toEqual([0x02, 0, 0, 0, 2, 0x7b, 0x7d]);
    const detail = toBinary(ErrorDetailsSchema, create(ErrorDetailsSchema, {
      error: ErrorDetails_Error.RATE_LIMITED,
      details: create(CustomErrorDetailsSchema, { title: "Rate limited", detail: "retry in 3 s", isRetryable: true }),
    }));
    const env = encodeEndStream({ code: "resource_exhausted", message: "retry in 3 s", errorDetails: [detail] });
    expect(env[0]).toBe(0x02);
    expect(new DataView(env.buffer).getUint32(1)).toBe(env.length - 5);
    const json = JSON.parse(new TextDecoder().decode(env.subarray(5))) as { error: { details: { type: string; value: string }[] } };
    // Unpadded standard base64, as connect-es writes and reads it.
    expect(json.error.details[0]!.value).toBe(Buffer.from(detail).toString("base64").replace(/=+$/, ""));
    const parsed = parseEndStream(env.subarray(5));
    expect(parsed).toMatchObject({ ok: false, code: "resource_exhausted", message: "retry in 3 s" });
    if (parsed.ok) return;
    expect(toBinary(ErrorDetailsSchema, parsed.errorDetails[0]!)).toEqual(detail);
  });
});

describe("unknown fields", () => {
  it("are preserved through decode and encode (newer clients' fields are never rejected)", async () => {
    const { fromBinary, toBinary } = await import("@bufbuild/protobuf");
    const { AgentRunRequestSchema } = await import("../src/index.js");
    // run_id (25) = "r", then field 33 (a newer client's field) as a varint.
    const bytes = new Uint8Array([0xca, 0x01, 0x01, 0x72, 0x88, 0x02, 0x07]);
    const msg = fromBinary(AgentRunRequestSchema, bytes);
    expect(msg.runId).toBe("r");
    expect(msg.$unknown?.map((u) => u.no)).toEqual([33]);
    expect(toBinary(AgentRunRequestSchema, msg)).toEqual(bytes);
  });
});
