// The BullMQ dispatcher: one job per run generation, deterministic ids, idempotent adds,
// fail-fast when Redis is unreachable. Each test file uses its own queue prefix (hash tag).
import { randomUUID } from "node:crypto";
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BusUnavailableError, createBullmqDispatcher, runJobId, type BullmqDispatcher, type RunJobData } from "../src/index.js";
import { commandCount, countSocketWrites, monitorCommands } from "@byok/testing";
import { REDIS_URL } from "./redis-harness.js";

const ref = { tenantId: "acme", requestId: "req-1" };

describe("runJobId", () => {
  it("is deterministic, per generation, without ':' and injective", () => {
    expect(runJobId(ref, 1)).toBe("run-acme-req%2D1-g1");
    expect(runJobId(ref, 2)).not.toBe(runJobId(ref, 1));
    expect(runJobId({ tenantId: "a:b", requestId: "c" }, 1)).not.toContain(":");
    expect(runJobId({ tenantId: "a-b", requestId: "c" }, 1)).not.toBe(runJobId({ tenantId: "a", requestId: "b-c" }, 1));
    expect(() => runJobId(ref, 0)).toThrow();
  });
});

describe("BullMQ dispatcher", () => {
  const prefix = `{test-dispatch-${randomUUID().slice(0, 8)}}`;
  const name = "runs";
  let dispatcher: BullmqDispatcher;
  let admin: Redis;

  beforeAll(() => {
    admin = new Redis(REDIS_URL);
    dispatcher = createBullmqDispatcher({ redis: REDIS_URL, name, prefix, connectionName: "dispatch-test" });
  });
  afterAll(async () => {
    await dispatcher.queue.obliterate({ force: true }).catch(() => undefined);
    await dispatcher.close();
    const keys = await admin.keys(`${prefix}:*`);
    if (keys.length > 0) await admin.unlink(...keys);
    await admin.quit();
  });

  it("adds one job per generation; re-adding the same generation is a no-op", async () => {
    await dispatcher.dispatch(ref, 1, { traceparent: "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01" });
    await dispatcher.dispatch(ref, 1, {});
    await dispatcher.dispatch(ref, 1, {});
    const jobs = await dispatcher.queue.getJobs(["waiting", "active", "delayed", "completed"]);
    expect(jobs.map((j) => j.id)).toEqual([runJobId(ref, 1)]);
    expect(jobs[0]!.data).toMatchObject({ tenantId: "acme", requestId: "req-1", generation: 1 });
    expect(jobs[0]!.data.trace.traceparent).toMatch(/^00-/);
  });

  it("a completed job of generation 1 does not block generation 2, and stays a no-op itself", async () => {
    const done: string[] = [];
    const worker = new Worker<RunJobData>(name, async (job) => void done.push(job.id ?? ""), {
      connection: { host: "127.0.0.1", port: Number(new URL(REDIS_URL).port || 6379), maxRetriesPerRequest: null },
      prefix,
    });
    try {
      const deadline = Date.now() + 10_000;
      while (!done.includes(runJobId(ref, 1)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await dispatcher.dispatch(ref, 1, {}); // a late duplicate append of the finished generation
      await dispatcher.dispatch(ref, 2, {});
      while (!done.includes(runJobId(ref, 2)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(done).toEqual([runJobId(ref, 1), runJobId(ref, 2)]);
    } finally {
      await worker.close();
    }
  });

  it("admits a new run until maxWaitingRuns jobs wait, reading the depth with two commands (LLEN + ZCARD) in one write", async () => {
    const p = `{test-admit-${randomUUID().slice(0, 8)}}`;
    const limited = createBullmqDispatcher({ redis: REDIS_URL, name, prefix: p, maxWaitingRuns: 2 });
    try {
      await limited.dispatch(ref, 1, {});
      const m = await monitorCommands(REDIS_URL);
      // The dispatcher's own producer connection (a standalone ioredis client here).
      const connection = (await limited.queue.getBackend().client) as unknown as Redis;
      const writes = countSocketWrites(connection.stream);
      expect(await limited.admit()).toBeUndefined();
      expect(writes).toEqual({ writes: 1, chunks: 2 });
      expect(commandCount(await m.stop(), p)).toBe(2);
      await limited.dispatch(ref, 2, {});
      expect(await limited.admit()).toEqual({ waiting: 2, limit: 2 });
      // Priorities are BullMQ's "waiting" too.
      await limited.queue.add("other", { tenantId: "acme", requestId: "req-1", generation: 3, trace: {} }, { priority: 1 });
      expect(await limited.admit()).toEqual({ waiting: 3, limit: 2 });
    } finally {
      await limited.queue.obliterate({ force: true }).catch(() => undefined);
      await limited.close();
      const keys = await admin.keys(`${p}:*`);
      if (keys.length > 0) await admin.unlink(...keys);
    }
  });

  it("rejects with BusUnavailableError when Redis cannot be reached", async () => {
    const down = createBullmqDispatcher({ redis: "redis://127.0.0.1:1", name, prefix, commandTimeoutMs: 500 });
    try {
      await expect(down.dispatch(ref, 1, {})).rejects.toBeInstanceOf(BusUnavailableError);
    } finally {
      await down.close();
    }
  });
});
