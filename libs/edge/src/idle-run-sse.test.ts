// A RunSSE waiting for its run is a record, not a call stack (docs/architecture.md "Idle RunSSE
// streams"): what it still holds of the request, its heartbeats, the run it wakes up for, and the
// end when its client goes while it waits. Both buses: the memory bus of embedded mode and the
// Redis bus (real Redis, a prefix of this file's own), whose waiting readers share one channel.
import { randomUUID } from "node:crypto";
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { connect as connectHttp2, createServer as createHttp2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { createMemoryBus, createRedisBus, openQueueConnection, startsChannel, type Bus } from "@byok/bus";
import { HEARTBEAT_FRAME } from "@byok/protocol";
import { waitFor } from "@byok/testing";
import { BidiRequestIdSchema, encodeEnvelope } from "@byok/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOpenAuthenticator } from "./auth.js";
import { createEdgeHandler, RUN_SSE_PATH, type EdgeDeps } from "./server.js";
import { testEdgeDeps } from "./test-support/edge-deps.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const TENANT = "acme";
const busPrefix = `test:edge-idle:${randomUUID().slice(0, 8)}`;
const BUS_OPTIONS = { seqnoWindow: 16, maxOutputFrames: 100, maxInputEntries: 100, finishedRetentionMs: 60_000, sequenceStateTtlMs: 60_000 };
const HEARTBEAT_MS = 300;

/** The envelopes of a response body so far: [flags, payload]. */
function envelopes(body: Buffer): [number, Buffer][] {
  const out: [number, Buffer][] = [];
  for (let at = 0; at + 5 <= body.byteLength; ) {
    const len = body.readUInt32BE(at + 1);
    if (at + 5 + len > body.byteLength) break;
    out.push([body[at]!, body.subarray(at + 5, at + 5 + len)]);
    at += 5 + len;
  }
  return out;
}

/** A RunSSE over node:http whose body is collected as it arrives. */
function openRunSse(port: number, requestId: string) {
  const body = encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })));
  const state = { chunks: [] as Buffer[], ended: false, status: 0 };
  const req = request({
    host: "127.0.0.1", port, path: RUN_SSE_PATH, method: "POST", agent: false,
    headers: { "content-type": "application/connect+proto", "content-length": String(body.byteLength), "x-cursor-streaming": "true", "x-request-id": requestId },
  }, (res) => {
    state.status = res.statusCode ?? 0;
    res.on("data", (c: Buffer) => state.chunks.push(c));
    res.on("end", () => (state.ended = true));
  });
  req.on("error", () => {});
  req.end(body);
  return { req, state, envelopes: () => envelopes(Buffer.concat(state.chunks)) };
}

async function gauge(deps: EdgeDeps, name: "runSseOpen"): Promise<number> {
  return (await deps.metrics[name].get()).values[0]?.value ?? 0;
}
async function ended(deps: EdgeDeps, code: string): Promise<number> {
  return (await deps.metrics.runSseStreams.get()).values.find((v) => v.labels.end_code === code)?.value ?? 0;
}

describe.each(["memory", "redis"] as const)("an idle RunSSE (%s bus)", (kind) => {
  let bus: Bus;
  let server: Server;
  let deps: EdgeDeps;
  let port: number;
  const requests = new Map<string, IncomingMessage>();

  beforeAll(async () => {
    bus = kind === "memory" ? createMemoryBus(BUS_OPTIONS) : createRedisBus({ redis: REDIS_URL, keyPrefix: busPrefix, options: BUS_OPTIONS });
    const base = testEdgeDeps({
      bus,
      // No BidiAppend here: the test writes the run's input and output to the bus as the edge and a worker would.
      dispatcher: { dispatch: async () => undefined, admit: async () => undefined },
      auth: createOpenAuthenticator(TENANT),
    });
    deps = { ...base, timers: { ...base.timers, heartbeatMs: HEARTBEAT_MS, notFoundWaitMs: 30_000 } };
    const edge = createEdgeHandler(deps);
    server = createServer((req, res) => {
      requests.set(String(req.headers["x-request-id"]), req);
      edge(req, res);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  }, 30_000);

  afterAll(async () => {
    server?.closeAllConnections();
    server?.close();
    await bus.close();
    if (kind === "redis") {
      const redis = openQueueConnection(REDIS_URL, { name: "edge-idle-test:cleanup", blocking: false });
      const keys = await redis.keys(`${busPrefix}:*`);
      if (keys.length > 0) await redis.unlink(...keys);
      await redis.quit();
    }
  });

  it("lets the request's headers and body listeners go, sends heartbeats, and follows its run once it appears", async () => {
    const requestId = `idle-${randomUUID()}`;
    const ref = { tenantId: TENANT, requestId };
    const s = openRunSse(port, requestId);
    await waitFor(async () => requests.get(requestId)?.rawHeaders.length === 0 || undefined, 5_000, "headers released");
    const req = requests.get(requestId)!;
    // What node:http keeps for the stream's whole life holds no header strings and no listeners of the body's reader.
    expect(Object.keys(req.headers)).toEqual([]);
    expect(req.eventNames()).toEqual([]);
    if (kind === "redis") {
      // Waiting, it subscribed no channel of its own: the bus's one starts channel serves it.
      const admin = openQueueConnection(REDIS_URL, { name: "edge-idle-test:admin", blocking: false });
      try {
        // Every wake channel is a shard channel on a standalone server (libs/bus/README.md).
        expect(await admin.call("PUBSUB", "SHARDCHANNELS", `${busPrefix}:wake:*`)).toEqual([startsChannel(busPrefix)]);
        expect(await admin.call("PUBSUB", "CHANNELS", `${busPrefix}:wake:*`)).toEqual([]);
      } finally {
        await admin.quit();
      }
    }
    // Heartbeats while it waits (the head came at once).
    await waitFor(async () => (s.envelopes().length >= 2 ? true : undefined), 5_000, "two heartbeats");
    expect(s.state.status).toBe(200);
    for (const [flags, payload] of s.envelopes()) {
      expect(flags).toBe(0);
      expect(Buffer.from(payload).equals(Buffer.from(HEARTBEAT_FRAME))).toBe(true);
    }
    // The run appears (as BidiAppend's bus append starts it); a worker writes its output and end.
    await bus.appendInput(ref, 1n, new Uint8Array([1]), {});
    const epoch = (await bus.claim(ref, 1)).epoch;
    const frames = [Buffer.from("frame one"), Buffer.from("frame two")];
    expect(await bus.appendOutput(ref, 1, epoch, [frames[0]!], {})).toMatchObject({ ok: true });
    expect(await bus.appendOutput(ref, 1, epoch, [frames[1]!], {})).toMatchObject({ ok: true });
    expect(await bus.endOutput(ref, 1, epoch, { ok: true })).toMatchObject({ ok: true });
    await waitFor(async () => s.state.ended || undefined, 5_000, "the stream's end");
    const got = s.envelopes().filter(([, p]) => !Buffer.from(p).equals(Buffer.from(HEARTBEAT_FRAME)));
    expect(got.map(([f, p]) => [f, p.toString()])).toEqual([[0, "frame one"], [0, "frame two"], [2, "{}"]]);
  });

  it("waits and follows its run over h2c too (node:http2's request keeps its headers)", async () => {
    const edge = createEdgeHandler(deps);
    // The services serve h2c through node:http2's compatibility API, as here.
    const h2server = createHttp2Server((req, res) => edge(req as unknown as IncomingMessage, res as unknown as ServerResponse));
    await new Promise<void>((r) => h2server.listen(0, "127.0.0.1", r));
    const session = connectHttp2(`http://127.0.0.1:${(h2server.address() as AddressInfo).port}`);
    try {
      const requestId = `h2-${randomUUID()}`;
      const ref = { tenantId: TENANT, requestId };
      const stream = session.request({ ":method": "POST", ":path": RUN_SSE_PATH, "content-type": "application/connect+proto", "x-request-id": requestId });
      const chunks: Buffer[] = [];
      let status = 0;
      stream.on("response", (h) => (status = Number(h[":status"])));
      stream.on("data", (c: Buffer) => chunks.push(c));
      const done = new Promise<void>((r) => stream.on("end", () => r()));
      stream.end(encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId }))));
      await waitFor(async () => (envelopes(Buffer.concat(chunks)).length >= 1 ? true : undefined), 5_000, "a heartbeat over h2c");
      await bus.appendInput(ref, 1n, new Uint8Array([1]), {});
      const epoch = (await bus.claim(ref, 1)).epoch;
      await bus.appendOutput(ref, 1, epoch, [Buffer.from("over h2c")], {});
      await bus.endOutput(ref, 1, epoch, { ok: true });
      await done;
      expect(status).toBe(200);
      const got = envelopes(Buffer.concat(chunks)).filter(([, p]) => !Buffer.from(p).equals(Buffer.from(HEARTBEAT_FRAME)));
      expect(got.map(([f, p]) => [f, p.toString()])).toEqual([[0, "over h2c"], [2, "{}"]]);
    } finally {
      session.close();
      h2server.close();
    }
  });

  it("ends client_gone when its client goes while it waits, and holds nothing after", async () => {
    const requestId = `gone-${randomUUID()}`;
    const before = await ended(deps, "client_gone");
    const s = openRunSse(port, requestId);
    await waitFor(async () => ((await gauge(deps, "runSseOpen")) === 1 && requests.get(requestId)?.rawHeaders.length === 0) || undefined, 5_000, "stream open");
    s.req.destroy();
    await waitFor(async () => ((await ended(deps, "client_gone")) === before + 1 ? true : undefined), 5_000, "client_gone");
    expect(await gauge(deps, "runSseOpen")).toBe(0);
    // Its start watch is gone too: a run of that request now wakes nobody (and breaks nothing).
    await bus.appendInput({ tenantId: TENANT, requestId }, 1n, new Uint8Array([1]), {});
  });
});
