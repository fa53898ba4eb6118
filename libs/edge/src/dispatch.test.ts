// When BidiAppend adds the run's job: the append that starts a generation, and a duplicate (a
// retry: after a failed dispatch, after an ingress died between its bus append and its
// dispatch), never the generation's other appends. Real Redis: the Redis bus and the BullMQ
// dispatcher of distributed mode, under prefixes of this file's own.
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toBinary } from "@bufbuild/protobuf";
import { ANONYMOUS_PRINCIPAL, BusUnavailableError, createBullmqDispatcher, createRedisBus, openQueueConnection, runJobId, type Bus, type BullmqDispatcher, type RequestRef } from "@byok/bus";
import { encodeAppendBody, heartbeatMessage, runRequestMessage } from "@byok/testing";
import { AgentClientMessageSchema, type AgentClientMessage } from "@byok/wire";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createOpenAuthenticator } from "./auth.js";
import { BIDI_APPEND_PATH, createEdgeHandler } from "./server.js";
import { testEdgeDeps } from "./test-support/edge-deps.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const TENANT = "acme";
const busPrefix = `test:edge-dispatch:${randomUUID().slice(0, 8)}`;
const queuePrefix = `{test-edge-dispatch-${randomUUID().slice(0, 8)}}`;

let bus: Bus;
let dispatcher: BullmqDispatcher;
let server: Server;
/** Every dispatch the edge asked for, and whether the next one fails (a Redis blip at the queue). */
const dispatched: { ref: RequestRef; generation: number }[] = [];
let failNextDispatch = false;

beforeAll(async () => {
  bus = createRedisBus({
    redis: REDIS_URL,
    keyPrefix: busPrefix,
    options: { seqnoWindow: 16, maxOutputFrames: 100, maxInputEntries: 100, finishedRetentionMs: 60_000, sequenceStateTtlMs: 60_000 },
  });
  dispatcher = createBullmqDispatcher({ redis: REDIS_URL, name: "runs", prefix: queuePrefix, connectionName: "edge-dispatch-test" });
  const edge = createEdgeHandler(testEdgeDeps({
    bus,
    dispatcher: {
      async dispatch(ref, generation, trace) {
        dispatched.push({ ref, generation });
        if (failNextDispatch) {
          failNextDispatch = false;
          throw new BusUnavailableError("run dispatcher: not connected to Redis (test)");
        }
        await dispatcher.dispatch(ref, generation, trace);
      },
      admit: () => dispatcher.admit(),
    },
    auth: createOpenAuthenticator(TENANT),
  }));
  server = createServer(edge);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
}, 30_000);

afterAll(async () => {
  server?.close();
  await dispatcher.close();
  await bus.close();
  // The Redis is shared: exactly this file's keys go.
  const redis = openQueueConnection(REDIS_URL, { name: "edge-dispatch-test:cleanup", blocking: false });
  for (const prefix of [busPrefix, queuePrefix]) {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.unlink(...keys);
  }
  await redis.quit();
});

beforeEach(() => {
  dispatched.length = 0;
  failNextDispatch = false;
});

async function append(requestId: string, seqno: number, msg: AgentClientMessage): Promise<{ status: number; body: string }> {
  const { body, headers } = encodeAppendBody(requestId, seqno, msg);
  const r = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${BIDI_APPEND_PATH}`, { method: "POST", headers, body });
  return { status: r.status, body: await r.text() };
}

const runRequest = () => runRequestMessage({ text: "hi", conversationId: randomUUID(), modelId: "m" });

/** The ids of the queue's run jobs of `requestId`. */
async function jobsOf(requestId: string): Promise<string[]> {
  const jobs = await dispatcher.queue.getJobs(["waiting", "active", "delayed", "completed", "failed", "prioritized"]);
  return jobs.filter((j) => j.data.requestId === requestId).map((j) => j.id ?? "");
}

describe("BidiAppend dispatches the run's job", () => {
  it("once per generation: the starting append adds it, the generation's later appends do not", async () => {
    const requestId = `r-${randomUUID()}`;
    const ref = { tenantId: TENANT, requestId };
    expect((await append(requestId, 1, runRequest())).status).toBe(200);
    for (let seqno = 2; seqno <= 5; seqno++) expect((await append(requestId, seqno, heartbeatMessage())).status).toBe(200);
    expect(dispatched).toEqual([{ ref, generation: 1 }]);
    expect(await jobsOf(requestId)).toEqual([runJobId(ref, 1)]);

    // The next generation (seqno 1 once the first ended) has its own job, added by its own start.
    const epoch = (await bus.claim(ref, 1)).epoch;
    await bus.endOutput(ref, 1, epoch, { ok: true });
    expect((await append(requestId, 1, runRequest())).status).toBe(200);
    expect((await append(requestId, 2, heartbeatMessage())).status).toBe(200);
    expect(dispatched).toEqual([{ ref, generation: 1 }, { ref, generation: 2 }]);
    expect((await jobsOf(requestId)).sort()).toEqual([runJobId(ref, 1), runJobId(ref, 2)].sort());
  });

  it("a starting append that arrives after its successors (buffered) still adds the job", async () => {
    const requestId = `r-${randomUUID()}`;
    const ref = { tenantId: TENANT, requestId };
    expect((await append(requestId, 2, heartbeatMessage())).status).toBe(200);
    expect(dispatched).toEqual([]);
    expect((await append(requestId, 1, runRequest())).status).toBe(200);
    expect(dispatched).toEqual([{ ref, generation: 1 }]);
    expect(await jobsOf(requestId)).toEqual([runJobId(ref, 1)]);
  });

  it("a retried append after a failed dispatch starts the run, also when later appends came between", async () => {
    const requestId = `r-${randomUUID()}`;
    const ref = { tenantId: TENANT, requestId };
    failNextDispatch = true;
    const first = await append(requestId, 1, runRequest());
    expect(first.status).toBe(503);
    expect(first.body).toMatch(/unavailable/);
    expect(await jobsOf(requestId)).toEqual([]);
    // A pipelined successor is accepted without a dispatch of its own…
    expect((await append(requestId, 2, heartbeatMessage())).status).toBe(200);
    expect(await jobsOf(requestId)).toEqual([]);
    // …and the client's retry of the failed append (a duplicate now) adds the job.
    expect((await append(requestId, 1, runRequest())).status).toBe(200);
    expect(dispatched).toEqual([{ ref, generation: 1 }, { ref, generation: 1 }]);
    expect(await jobsOf(requestId)).toEqual([runJobId(ref, 1)]);
  });

  it("a retried append after an ingress died between the bus append and the dispatch starts the run", async () => {
    const requestId = `r-${randomUUID()}`;
    const ref = { tenantId: TENANT, requestId };
    // What the dead replica left: the entry on the bus, no job.
    const recorded = await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, runRequest()), { trace: {}, principal: ANONYMOUS_PRINCIPAL });
    expect(recorded).toMatchObject({ status: "accepted", startedGeneration: true });
    expect(await jobsOf(requestId)).toEqual([]);
    expect((await append(requestId, 1, runRequest())).status).toBe(200);
    expect(dispatched).toEqual([{ ref, generation: 1 }]);
    expect(await jobsOf(requestId)).toEqual([runJobId(ref, 1)]);
  });
});
