// What the engine tests share: one fixed simulator target, short timers, and the client's side
// of the KV handshake (every set_blob_args acknowledged through the input).
import { randomUUID } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { createMemoryBus, createRedisBus, type Bus, type BusOptions, type RequestRef } from "@byok/bus";
import { retryPolicy, type ProviderTarget } from "@byok/protocol";
import { createProviderAdapter } from "@byok/providers";
import { createStore, type Store } from "@byok/store";
import { createLogger } from "@byok/telemetry";
import { deleteKeysMatching, startSimulator, type Simulator, type SimulatorOptions } from "@byok/testing";
import { AgentClientMessageSchema, AgentServerMessageSchema, type AgentServerMessage } from "@byok/wire";
import { createRunEngine, type RunEngine, type RunEngineDeps } from "../src/index.js";

/** What an in-process engine test runs against: a simulator, a memory bus and a store. */
export interface EngineWorld {
  sim: Simulator;
  bus: Bus;
  store: Store;
  close(): Promise<void>;
}

export interface EngineWorldOptions {
  /** The simulator's options (e.g. a small context window for a model, so it refuses as the vendors do). */
  sim?: SimulatorOptions;
  /**
   * The store: in-memory PGlite (default), or the test Postgres (DATABASE_URL, default the local
   * one) under a fresh schema, dropped when the world closes.
   */
  store?: "pglite" | "postgres";
}

/** The enclosing file's (or block's) engine world: started before its tests, closed after them. */
export function suiteWorld(opts: EngineWorldOptions = {}): EngineWorld {
  const world = {} as EngineWorld;
  beforeAll(async () => {
    Object.assign(world, await startEngineWorld(opts));
  });
  afterAll(async () => world.close());
  return world;
}

const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export async function startEngineWorld(opts: EngineWorldOptions = {}): Promise<EngineWorld> {
  const sim = await startSimulator(opts.sim);
  const bus = createMemoryBus(BUS_OPTIONS);
  const schema = `agent_test_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const store = opts.store === "postgres" ? await createStore({ driver: "postgres", url: DATABASE_URL, schema }) : await createStore({ driver: "pglite" });
  return {
    sim,
    bus,
    store,
    async close() {
      await bus.close();
      await store.close();
      await sim.close();
      if (opts.store === "postgres") await dropSchema(schema);
    },
  };
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end();
  }
}

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
export const BUS_OPTIONS: BusOptions = { seqnoWindow: 64, maxOutputFrames: 1000, maxInputEntries: 100, finishedRetentionMs: 60_000, sequenceStateTtlMs: 60_000 };

/**
 * A bus of `kind` for the enclosing describe block (the Redis one under a fresh key prefix,
 * its keys deleted afterwards); the returned getter answers once the block's tests run.
 */
export function suiteBus(kind: "memory" | "redis", name: string): () => Bus {
  const keyPrefix = `test:agent:${name}:${randomUUID().slice(0, 8)}`;
  let bus: Bus | undefined;
  beforeAll(() => {
    bus = kind === "memory" ? createMemoryBus(BUS_OPTIONS) : createRedisBus({ redis: REDIS_URL, keyPrefix, options: BUS_OPTIONS });
  });
  afterAll(async () => {
    await bus?.close();
    if (kind !== "redis") return;
    const redis = new Redis(REDIS_URL);
    await deleteKeysMatching(redis, `${keyPrefix}:*`);
    await redis.quit();
  });
  return () => {
    if (!bus) throw new Error("suiteBus: the bus exists only while the block's tests run");
    return bus;
  };
}

/** Short timers (a checkpoint whose blobs are not acknowledged within 200 ms is skipped). */
export const TEST_TIMERS: RunEngineDeps["timers"] = { reconnectGraceMs: 60_000, presenceCheckMs: 1_000, kvAckTimeoutMs: 200, toolTimeoutMs: 5_000, prewarmTtlMs: 5_000, snapshotIntervalMs: 250, conversationRunTtlMs: 3_600_000, deltaCoalesceMs: 20 };

/** The simulator as an OpenAI Chat target with a gateway key (`contextWindow`: the route's, if it says). */
export function simTarget(sim: Simulator, contextWindow?: number): ProviderTarget {
  return { kind: "openai-chat", model: "sim", baseUrl: `${sim.url}/v1`, apiKey: "sk-engine-test-key", credentialsSource: "gateway", ...(contextWindow === undefined ? {} : { contextWindow }) };
}

export function testEngine(sim: Simulator, bus: Bus, store: Store, extra: Partial<RunEngineDeps> = {}): RunEngine {
  return createRunEngine({
    bus,
    store,
    adapterFor: (k) => createProviderAdapter(k),
    // One fixed gateway target: routing itself is tested where it lives (libs/providers, tenancy).
    resolveTargets: () => ({ ok: true as const, targets: [simTarget(sim)] }),
    retryPolicy: retryPolicy({ baseDelayMs: 5 }),
    timers: TEST_TIMERS,
    logger: createLogger({ service: "test", level: "silent" }),
    ...extra,
  });
}

export function describeFrame(m: AgentServerMessage): string {
  if (m.message.case !== "interactionUpdate") return String(m.message.case);
  const u = m.message.value.message;
  if (u.case === "textDelta") return `${u.value.isServerNotice ? "notice" : "text"}:${u.value.text.trim()}`;
  return String(u.case);
}

/** Acts as the Cursor client's blob store: acknowledges every set_blob_args through the input. */
export function ackKv(bus: Bus, ref: RequestRef, firstSeqno = 2n): () => void {
  let seqno = firstSeqno;
  let read = 0;
  let busy = Promise.resolve();
  return bus.watch(ref, () => {
    busy = busy.then(async () => {
      const out = await bus.readOutput(ref, 1, read, 1000);
      for (const e of out.entries) {
        read = e.index + 1;
        const m = fromBinary(AgentServerMessageSchema, e.frame);
        if (m.message.case !== "kvServerMessage") continue;
        const ack = create(AgentClientMessageSchema, { message: { case: "kvClientMessage", value: { id: m.message.value.id, message: { case: "setBlobResult", value: {} } } } });
        await bus.appendInput(ref, seqno++, toBinary(AgentClientMessageSchema, ack), {});
      }
    });
  });
}

export { waitFor } from "@byok/testing";
