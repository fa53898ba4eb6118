// Every bad input of issue 2 gets a clear Connect error; the server keeps serving and nothing else is lost.
import { request } from "node:http";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorClient, heartbeatMessage, runRequestMessage, type CursorClient } from "@byok/testing";
import { AgentClientMessageSchema, BidiAppendRequestSchema } from "@byok/wire";
import { startHarness, TEST_MODEL, type Harness } from "./harness.js";

function rawAppend(url: string, body: Uint8Array, contentType = "application/proto"): Promise<{ status: number; json: { code?: string; message?: string } }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/aiserver.v1.BidiService/BidiAppend`, {
      method: "POST",
      headers: { "content-type": contentType, "connect-protocol-version": "1", "content-length": String(body.byteLength) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: res.statusCode ?? 0, json: text ? (JSON.parse(text) as { code?: string; message?: string }) : {} });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

const appendBody = (init: { data?: string; dataBinary?: Uint8Array; requestId?: string; seqno?: bigint }) =>
  toBinary(
    BidiAppendRequestSchema,
    create(BidiAppendRequestSchema, {
      data: init.data ?? "",
      dataBinary: init.dataBinary ?? new Uint8Array(),
      ...(init.requestId === undefined ? {} : { requestId: { requestId: init.requestId } }),
      appendSeqno: init.seqno ?? 1n,
    }),
  );

const hb = toBinary(AgentClientMessageSchema, heartbeatMessage());

describe("bad input", () => {
  let h: Harness;
  let client: CursorClient;
  beforeAll(async () => {
    h = await startHarness();
    client = createCursorClient({ baseUrl: h.gw.url });
  });
  afterAll(async () => h.close());

  it.each([
    ["non-hex data", { data: "zz", requestId: "bad-1" }, "invalid_argument", /non-hex/],
    ["odd-length data", { data: "abc", requestId: "bad-2" }, "invalid_argument", /odd number/],
    ["protobuf that is not an AgentClientMessage", { data: "0a05ff", requestId: "bad-3" }, "invalid_argument", /not a valid agent\.v1\.AgentClientMessage/],
    ["data and data_binary that differ", { data: Buffer.from(hb).toString("hex"), dataBinary: new Uint8Array([0x42, 0x00]), requestId: "bad-4" }, "invalid_argument", /different content/],
    ["a missing request_id", { data: Buffer.from(hb).toString("hex") }, "invalid_argument", /request_id/],
    ["no payload", { requestId: "bad-5" }, "invalid_argument", /no payload/],
    ["an oversized binary payload", { dataBinary: new Uint8Array(70_000), requestId: "bad-6" }, "resource_exhausted", /limit is 65536 bytes/],
    ["an oversized hex payload", { data: "00".repeat(70_000), requestId: "bad-7" }, "resource_exhausted", /limit is 65536 bytes/],
  ] as const)("refuses %s", async (_name, init, code, message) => {
    const res = await rawAppend(h.gw.url, appendBody(init));
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.json.code).toBe(code);
    expect(res.json.message).toMatch(message);
  });

  it("refuses a body over the transport limit before reading it all", async () => {
    const res = await rawAppend(h.gw.url, appendBody({ data: "00".repeat(200_000), requestId: "bad-8" }));
    expect(res.json.code).toBe("resource_exhausted");
  });

  it("refuses a seqno beyond the documented window and still accepts the gap's fill", async () => {
    const far = await client.append("window-1", 1 + 16 + 2, hb);
    expect(far).toMatchObject({ ok: false, code: "invalid_argument" });
    if (!far.ok) expect(far.message).toMatch(/more than 16 ahead/);
    expect(await client.append("window-1", 17, hb)).toEqual({ ok: true });
  });

  it("accepts equal data and data_binary, gzip bodies, JSON bodies and data_binary alone", async () => {
    expect(await rawAppend(h.gw.url, appendBody({ data: Buffer.from(hb).toString("hex"), dataBinary: hb, requestId: "ok-1", seqno: 1n }))).toMatchObject({ status: 200 });
    expect(await client.append("ok-2", 1, heartbeatMessage(), { gzip: true })).toEqual({ ok: true });
    expect(await client.append("ok-3", 1, heartbeatMessage(), { json: true })).toEqual({ ok: true });
    expect(await client.append("ok-4", 1, heartbeatMessage(), { binary: true })).toEqual({ ok: true });
  });

  function rawRunSse(body: Buffer): Promise<{ status: number; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const req = request(`${h.gw.url}/agent.v1.AgentService/RunSSE`, {
        method: "POST",
        headers: { "content-type": "application/connect+proto", "connect-protocol-version": "1", "x-cursor-streaming": "true", "content-length": String(body.length) },
      }, (r) => {
        const chunks: Buffer[] = [];
        r.on("data", (c: Buffer) => chunks.push(c));
        r.on("end", () => resolve({ status: r.statusCode ?? 0, body: Buffer.concat(chunks) }));
      });
      req.on("error", reject);
      req.end(body);
    });
  }

  it.each([
    ["a truncated envelope", Buffer.from([0, 0, 0, 0, 10, 1, 2, 3]), ["invalid_argument"]],
    ["an envelope whose payload is not a BidiRequestId", Buffer.from([0, 0, 0, 0, 3, 0x0a, 0x05, 0xff]), ["invalid_argument"]],
    ["an empty BidiRequestId", Buffer.from([0, 0, 0, 0, 0]), ["invalid_argument"]],
    ["bytes that are not an envelope at all", Buffer.from("not an envelope"), ["invalid_argument"]],
  ] as const)("answers a RunSSE body that is %s with a Connect error in the end-stream", async (_name, body, codes) => {
    const res = await rawRunSse(body);
    // Streaming errors travel in the end-stream frame over HTTP 200.
    expect(res.status).toBe(200);
    expect(res.body[0]).toBe(0x02);
    const json = JSON.parse(res.body.subarray(5).toString("utf8")) as { error: { code: string; message: string } };
    expect(codes).toContain(json.error.code);
    expect(json.error.message.length).toBeGreaterThan(5);
  });

  it("accepts a message with no known branch (a newer client) and keeps the run going", async () => {
    h.sim.enqueue({ text: "still here", usage: { inputTokens: 1, outputTokens: 2 }, firstByteDelayMs: 100 });
    const newerBranch = new Uint8Array([0xca, 0x01, 0x02, 0x08, 0x01]); // field 25 (unknown), length-delimited
    const turn = await client.runTurn({
      requestId: "unknown-branch",
      message: runRequestMessage({ text: "hi", conversationId: "c-unknown", modelId: TEST_MODEL }),
      onMessage: async (m, t) => {
        if (m.message.case === "conversationCheckpointUpdate" && t.nextSeqno === 2) {
          expect(await t.append(newerBranch)).toEqual({ ok: true });
        }
      },
    });
    expect(turn.end).toEqual({ ok: true });
    expect(turn.textDeltas).toBe("still here");
  });

  it("keeps serving whole turns after all of the above", async () => {
    h.sim.enqueue({ text: "fine", usage: { inputTokens: 3, outputTokens: 1 } });
    const turn = await client.runTurn({
      requestId: "after-bad",
      message: runRequestMessage({ text: "hi", conversationId: "c-after", modelId: TEST_MODEL }),
    });
    expect(turn.end).toEqual({ ok: true });
    expect(turn.textDeltas).toBe("fine");
  });
});
