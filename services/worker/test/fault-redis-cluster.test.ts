// One turn against a local 3-node Redis Cluster started from redis-server binaries: the bus
// and the BullMQ queue on an ioredis Cluster client, every key of the request in one slot,
// every key of the queue in one slot (the hash-tagged prefix).
import type { ChildProcess } from "node:child_process";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorClient, runRequestMessage } from "@byok/testing";
import { startTestCluster, TEST_MODEL, waitFor, type TestCluster } from "./process-harness.js";
import { freePort, haveRedisServer, killRedisServer, startRedisServer } from "./redis-servers.js";

const run = promisify(execFile);

describe.runIf(haveRedisServer)("Redis Cluster (3 local nodes, real processes)", () => {
  const nodes: ChildProcess[] = [];
  const ports: number[] = [];
  let c: TestCluster;

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      ports.push(port);
      nodes.push(await startRedisServer(port, ["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`, "--cluster-node-timeout", "2000"]));
    }
    await run("redis-cli", ["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"]);
    for (const port of ports) {
      const r = new Redis({ port, lazyConnect: true });
      await r.connect();
      await waitFor(async () => String(await r.cluster("INFO")).includes("cluster_state:ok"), 20_000, `cluster state ok on ${port}`);
      r.disconnect();
    }
    c = await startTestCluster({
      ingress: 1,
      workers: 1,
      redisUrl: `redis://127.0.0.1:${ports[0]}`,
      env: { GATEWAY_REDIS_CLUSTER_NODES: ports.map((p) => `127.0.0.1:${p}`).join(",") },
    });
  }, 90_000);
  afterAll(async () => {
    await c?.close().catch(() => undefined);
    for (const n of nodes) await killRedisServer(n);
  });

  it("runs a turn with every key of the request in one slot and every queue key in one slot", async () => {
    c.sim.enqueue({ text: ["clustered ", "turn"] });
    const requestId = `cluster-${randomUUID()}`;
    const client = createCursorClient({ baseUrl: c.ingress[0]!.url, authToken: c.authToken });
    const out = await client.runTurn({ requestId, message: runRequestMessage({ text: "hi", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }) });
    expect(out.end).toEqual({ ok: true });
    expect(out.textDeltas).toContain("clustered turn");

    // Which nodes hold the request's keys and the queue's keys.
    const holders = { request: new Set<number>(), queue: new Set<number>() };
    let requestKeys = 0;
    for (const port of ports) {
      const r = new Redis({ port });
      // Request keys only: the conversation's current-run key has its own slot by design.
      const rk = await r.keys(`${c.keyPrefix}:req:*${requestId}*`);
      const qk = await r.keys(`${c.queuePrefix}:*`);
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
  });
});
