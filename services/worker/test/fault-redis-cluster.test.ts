// One turn against a local 3-node Redis Cluster started from redis-server binaries: the bus
// and the BullMQ queue on an ioredis Cluster client, every key of the request in one slot,
// every key of the queue in one slot (the hash-tagged prefix), the tenant's metering keys in one.
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorClient, runRequestMessage, startRedisCluster, type PrivateRedisCluster } from "@byok/testing";
import { startTestCluster, TEST_MODEL, type TestCluster } from "./process-harness.js";
import { haveRedisServer } from "./redis-servers.js";

describe.runIf(haveRedisServer)("Redis Cluster (3 local nodes, real processes)", () => {
  let redisCluster: PrivateRedisCluster;
  let ports: number[] = [];
  let c: TestCluster;

  beforeAll(async () => {
    redisCluster = await startRedisCluster(3);
    ports = redisCluster.ports;
    c = await startTestCluster({
      ingress: 1,
      workers: 1,
      redisUrl: `redis://127.0.0.1:${ports[0]}`,
      env: { GATEWAY_REDIS_CLUSTER_NODES: redisCluster.nodes.join(",") },
    });
  }, 90_000);
  afterAll(async () => {
    await c?.close().catch(() => undefined);
    await redisCluster?.close();
  });

  it("runs a turn with every key of the request in one slot and every queue key in one slot", async () => {
    c.sim.enqueue({ text: ["clustered ", "turn"] });
    const requestId = `cluster-${randomUUID()}`;
    const client = createCursorClient({ baseUrl: c.ingress[0]!.url, authToken: c.authToken });
    const out = await client.runTurn({ requestId, message: runRequestMessage({ text: "hi", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }) });
    expect(out.end).toEqual({ ok: true });
    expect(out.textDeltas).toContain("clustered turn");

    // Which nodes hold the request's keys and the queue's keys.
    const holders = { request: new Set<number>(), queue: new Set<number>(), metering: new Set<number>() };
    let requestKeys = 0;
    let meteringKeys = 0;
    for (const port of ports) {
      const r = new Redis({ port });
      // Request keys only: the conversation's current-run key has its own slot by design.
      const rk = await r.keys(`${c.keyPrefix}:req:*${requestId}*`);
      const qk = await r.keys(`${c.queuePrefix}:*`);
      // The worker's metering is on the cluster too: the tenant's budget counter and rate window.
      const mk = [...(await r.keys(`${c.keyPrefix}:budget:{default}:*`)), ...(await r.keys(`${c.keyPrefix}:rate:{default}:*`))];
      if (mk.length > 0) holders.metering.add(port);
      meteringKeys += mk.length;
      if (mk.length > 0) expect(new Set(await Promise.all(mk.map((k) => r.cluster("KEYSLOT", k)))).size).toBe(1);
      if (rk.length > 0) holders.request.add(port);
      if (qk.length > 0) holders.queue.add(port);
      requestKeys += rk.length;
      if (rk.length > 0) expect(new Set(await Promise.all(rk.map((k) => r.cluster("KEYSLOT", k)))).size).toBe(1);
      if (qk.length > 0) expect(new Set(await Promise.all(qk.map((k) => r.cluster("KEYSLOT", k)))).size).toBe(1);
      r.disconnect();
    }
    expect(requestKeys).toBeGreaterThan(3);
    expect(holders.request.size).toBe(1);
    expect(holders.queue.size).toBe(1);
    expect(meteringKeys).toBeGreaterThanOrEqual(2);
    expect(holders.metering.size).toBe(1);
  });
});
