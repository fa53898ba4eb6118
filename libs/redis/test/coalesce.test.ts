// Coalesced writes on a real Redis: the commands of one event-loop turn, issued from separate
// callbacks, leave in one socket write (counted at the socket's own `_write`/`_writev`, the
// stream-implementer methods every write goes through) and their replies are each command's own;
// a reconnected socket is coalesced too, and so is every node connection of a Redis Cluster.
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { countSocketWrites, haveRedisServerBinary, startRedisCluster } from "@byok/testing";
import { closeConnection, defaultTuning, hashTag, openConnection } from "../src/index.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/**
 * `n` commands, each from its own callback of one loop turn (immediates queued together run in
 * one check phase, each its own macrotask; timers could split over two turns under load).
 */
async function fromSeparateCallbacks<T>(n: number, command: (i: number) => Promise<T>): Promise<T[]> {
  const started = Array.from({ length: n }, (_, i) => new Promise<Promise<T>>((resolve) => setImmediate(() => resolve(command(i)))));
  return Promise.all(await Promise.all(started));
}

describe("coalesced Redis writes", () => {
  const prefix = `redis-coalesce-test:${randomUUID()}`;
  const name = `byok-coalesce-test-${randomUUID().slice(0, 8)}`;
  const redis = openConnection(REDIS_URL, defaultTuning(name));
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await closeConnection(redis);
  });

  it("sends the commands of one loop turn in one write, each answered with its own reply", async () => {
    await redis.ping();
    const seen = countSocketWrites(redis.stream);
    const replies = await fromSeparateCallbacks(40, (i) => redis.incrby(`${prefix}:n${i % 4}`, i));
    expect(seen).toEqual({ writes: 1, chunks: 40 });
    // Keys n0..n3: each reply is the running total of that key, in issue order.
    const totals = [0, 0, 0, 0];
    expect(replies).toEqual(Array.from({ length: 40 }, (_, i) => (totals[i % 4]! += i)));
  });

  it("a command alone goes out at once, in its own write", async () => {
    const seen = countSocketWrites(redis.stream);
    expect(await redis.set(`${prefix}:alone`, "1")).toBe("OK");
    expect(seen).toEqual({ writes: 1, chunks: 1 });
  });

  it("coalesces a reconnected connection's socket as well", async () => {
    const first = redis.stream;
    const id = await redis.client("ID");
    const killer = openConnection(REDIS_URL, defaultTuning(`${name}-killer`));
    try {
      expect(await killer.client("KILL", "ID", String(id))).toBe(1);
    } finally {
      await closeConnection(killer);
    }
    for (let i = 0; i < 200 && (redis.stream === first || redis.status !== "ready"); i++) await new Promise((r) => setTimeout(r, 25));
    expect(redis.stream).not.toBe(first);
    const seen = countSocketWrites(redis.stream);
    const replies = await fromSeparateCallbacks(10, (i) => redis.echo(`r${i}`));
    expect(replies).toEqual(Array.from({ length: 10 }, (_, i) => `r${i}`));
    expect(seen).toEqual({ writes: 1, chunks: 10 });
  });
});

describe.runIf(await haveRedisServerBinary())("coalesced Redis writes on a Redis Cluster (3 local nodes)", () => {
  it("coalesces each node connection: one loop turn's commands to one slot leave in one write", async () => {
    const cluster = await startRedisCluster(3);
    const redis = openConnection({ cluster: cluster.ports.map((port) => ({ host: "127.0.0.1", port })) }, defaultTuning("byok-coalesce-cluster-test"));
    try {
      const key = `coalesce:${hashTag("tenant-a")}:n`;
      await redis.set(key, "0");
      const nodes = (redis as unknown as { nodes(role: "master"): Redis[] }).nodes("master");
      expect(nodes).toHaveLength(3);
      await Promise.all(nodes.map((n) => n.ping())); // node connections open lazily
      const counts = nodes.map((n) => countSocketWrites(n.stream));
      const replies = await fromSeparateCallbacks(20, () => redis.incr(key));
      expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      // All twenty went to the slot's node, in one write.
      expect(counts.filter((c) => c.writes > 0)).toEqual([{ writes: 1, chunks: 20 }]);
    } finally {
      await closeConnection(redis);
      await cluster.close();
    }
  }, 60_000);
});
