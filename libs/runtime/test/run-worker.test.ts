// The run worker in process, against the shared Redis with a private key prefix and queue
// prefix: a job whose processor keeps failing ends its generation `internal` (with ErrorDetails)
// after the last attempt; a real engine that crashes once is retried as a takeover and finishes
// the turn; closing the worker hands a running generation back to the queue (waiting), neither
// completed nor failed; a job whose generation the bus does not hold fails at once, unretried.
import { randomUUID } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBullmqDispatcher, createRedisBus, runJobId, type Bus, type BullmqDispatcher } from "@byok/bus";
import { createRunEngine, type RunEngine } from "@byok/agent";
import { retryPolicy } from "@byok/protocol";
import { createProviderAdapter } from "@byok/providers";
import { createStore, type Store } from "@byok/store";
import { createLogger } from "@byok/telemetry";
import { deleteKeysMatching, runRequestMessage, startSimulator, waitFor } from "@byok/testing";
import { AgentClientMessageSchema, ErrorDetails_Error, ErrorDetailsSchema } from "@byok/wire";
import { createRunWorker } from "../src/index.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

const logger = createLogger({ service: "test", level: (process.env.TEST_LOG_LEVEL ?? "silent") as "silent" });

describe("run worker (in process)", () => {
  const id = randomUUID().slice(0, 8);
  const keyPrefix = `test:runworker:${id}`;
  const queue = { name: "runs", prefix: `{test-rw-${id}}` };
  let bus: Bus;
  let dispatcher: BullmqDispatcher;
  let admin: Redis;

  beforeAll(() => {
    admin = new Redis(REDIS_URL);
    bus = createRedisBus({
      redis: REDIS_URL,
      keyPrefix,
      options: { seqnoWindow: 8, maxOutputFrames: 100, maxInputEntries: 100, finishedRetentionMs: 60_000, sequenceStateTtlMs: 60_000 },
    });
    dispatcher = createBullmqDispatcher({ redis: REDIS_URL, ...queue, attempts: 2, backoffMs: 10 });
  });
  afterAll(async () => {
    await dispatcher.close();
    await bus.close();
    await deleteKeysMatching(admin, `${keyPrefix}:*`);
    await deleteKeysMatching(admin, `${queue.prefix}:*`);
    await admin.quit();
  });

  const worker = (engine: RunEngine) =>
    createRunWorker(
      { redis: REDIS_URL, ...queue, connectionName: `rw-${id}`, concurrency: 4, lockDurationMs: 2_000, stalledIntervalMs: 1_000, deadWorkerCheckMs: 250, maxStalledCount: 1 },
      { engine, bus, logger },
    );

  async function startGeneration(requestId: string) {
    const ref = { tenantId: "t", requestId };
    const out = await bus.appendInput(ref, 1n, new Uint8Array([1]), {});
    expect(out).toMatchObject({ status: "accepted", generation: 1 });
    await dispatcher.dispatch(ref, 1, {});
    return ref;
  }

  it("ends the generation `internal` with ErrorDetails once the job failed its last attempt", async () => {
    let calls = 0;
    const w = worker({
      runGeneration: async () => {
        calls++;
        throw new Error("the bus is unavailable");
      },
    });
    try {
      const ref = await startGeneration(`fail-${randomUUID()}`);
      const end = await waitFor(async () => (await bus.readOutput(ref, 1, 0, 10)).end, 15_000, "the generation's end");
      expect(end).toMatchObject({ ok: false, code: "internal" });
      expect(fromBinary(ErrorDetailsSchema, end.errorDetails!)).toMatchObject({ error: ErrorDetails_Error.INTERNAL, details: { title: "Gateway error", isRetryable: true } });
      expect(calls).toBe(2);
    } finally {
      await w.close();
    }
  });

  it("a real engine that crashes (injected fault) fails its job, and the retry takes the run over and finishes it", async () => {
    const sim = await startSimulator();
    const store: Store = await createStore({ driver: "pglite" });
    let faults = 1;
    const engine = createRunEngine({
      bus,
      store: {
        ...store,
        appendHistory: async (entries) => {
          if (faults-- > 0) throw new Error("injected fault: history write");
          return store.appendHistory(entries);
        },
      },
      adapterFor: (k) => createProviderAdapter(k),
      resolveTargets: () => ({
        ok: true as const,
        targets: [{ kind: "openai-chat" as const, model: "sim", baseUrl: `${sim.url}/v1`, apiKey: "sk-worker-crash-key", credentialsSource: "gateway" as const }],
      }),
      retryPolicy: retryPolicy({ baseDelayMs: 5 }),
      timers: { reconnectGraceMs: 60_000, presenceCheckMs: 1_000, kvAckTimeoutMs: 100, toolTimeoutMs: 5_000, prewarmTtlMs: 5_000, snapshotIntervalMs: 250, conversationRunTtlMs: 3_600_000 },
      logger,
    });
    let calls = 0;
    const w = worker({ runGeneration: (...args) => (calls++, engine.runGeneration(...args)) });
    try {
      sim.enqueue({ text: "after the crash", usage: { inputTokens: 3, outputTokens: 3 } });
      const ref = { tenantId: "t", requestId: `crash-${randomUUID()}` };
      const msg = runRequestMessage({ text: "survive a crash", conversationId: `c-${ref.requestId}`, modelId: "m" });
      await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
      await dispatcher.dispatch(ref, 1, {});
      const end = await waitFor(async () => (await bus.readOutput(ref, 1, 0, 10)).end, 15_000, "the generation's end");
      expect(end).toEqual({ ok: true });
      expect(faults).toBeLessThan(0); // the fault fired, on the first attempt
      expect(calls).toBeGreaterThanOrEqual(2); // the failed attempt, then the takeover that completed
      expect(sim.requests).toHaveLength(1);
      expect(JSON.stringify(sim.requests[0]!.body)).toContain("survive a crash");
      expect((await store.listHistory("t", `c-${ref.requestId}`)).map((h) => h.kind)).toEqual(["user", "assistant"]);
    } finally {
      await w.close();
      await store.close();
      await sim.close();
    }
  }, 120_000); // PGlite starts inside the test: slow on a loaded machine

  it("fails a job for a generation the bus does not hold at once, without a retry", async () => {
    let calls = 0;
    // As the engine does first: claim the generation (never created here).
    const w = worker({ runGeneration: async (ref, generation) => void (calls++, await bus.claim(ref, generation)) });
    try {
      const ref = { tenantId: "t", requestId: `gone-${randomUUID()}` };
      await dispatcher.dispatch(ref, 1, {});
      // The job is read once it failed: a copy read before could miss the failure's own writes.
      await waitFor(async () => (await dispatcher.queue.getJobState(runJobId(ref, 1))) === "failed", 10_000, "the job failed");
      const job = (await dispatcher.queue.getJob(runJobId(ref, 1)))!;
      expect(job.attemptsMade).toBe(1); // of 2 allowed: not retried
      expect(job.failedReason).toMatch(/generation 1 of request does not exist/);
      expect(calls).toBe(1);
    } finally {
      await w.close();
    }
  });

  it("close() hands a running generation back to the queue instead of completing it", async () => {
    let started = false;
    const w = worker({
      runGeneration: (_ref, _gen, signal) =>
        new Promise<void>((resolve) => {
          started = true;
          signal?.addEventListener("abort", () => resolve()); // the engine returns on abort
        }),
    });
    const ref = await startGeneration(`handback-${randomUUID()}`);
    await waitFor(() => started, 10_000, "the run started");
    await w.close();
    const job = await dispatcher.queue.getJob(runJobId(ref, 1));
    expect(await job!.getState()).toBe("waiting");
    expect(job!.attemptsMade).toBe(0);
  });
});
