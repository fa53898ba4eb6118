// Property-based fuzzing of the append_seqno gate: random sequences (any order, duplicates, gaps,
// seqno ≤ 0, runs ending and seqno 1 restarting the request) against a small reference model of
// the gate written from its contract (Bus.appendInput); the memory bus and the Redis bus must
// agree with the model on every outcome and on the delivered input of every generation.
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { fuzzRuns, reportFuzzCases } from "@byok/testing";
import { createMemoryBus, type AppendOutcome, type Bus, type BusOptions, type RequestRef } from "../src/index.js";
import { deleteKeys, openBus, uniquePrefix } from "./redis-harness.js";

const OPTIONS: BusOptions = {
  seqnoWindow: 4,
  maxOutputFrames: 50,
  maxInputEntries: 10,
  finishedRetentionMs: 60_000,
  sequenceStateTtlMs: 60_000,
};

type Op = { kind: "append"; seqno: number } | { kind: "end" };

interface ModelGeneration {
  next: bigint;
  buffered: Set<bigint>;
  delivered: bigint[];
  ended: boolean;
}

/** The gate as its contract states it, one request at a time. */
class GateModel {
  readonly generations: ModelGeneration[] = [];

  private latest(): ModelGeneration | undefined {
    return this.generations.at(-1);
  }

  append(seqno: bigint): AppendOutcome {
    let g = this.latest();
    // Seqno 1 (or ≤ 0) after the latest generation ended, or before any: a new generation.
    // Any other first append opens one too, waiting for seqno 1.
    if (!g || (g.ended && (seqno === 1n || seqno <= 0n))) {
      g = { next: 1n, buffered: new Set(), delivered: [], ended: false };
      this.generations.push(g);
    }
    const generation = this.generations.length;
    const started = g.delivered.length === 0;
    const cap = OPTIONS.maxInputEntries;
    if (seqno <= 0n) {
      if (g.delivered.length >= cap) return { status: "input_full", generation, limit: cap };
      g.delivered.push(seqno);
      return { status: "accepted", generation, startedGeneration: started };
    }
    if (seqno < g.next || g.buffered.has(seqno)) return { status: "duplicate", generation };
    if (seqno - g.next > BigInt(OPTIONS.seqnoWindow)) return { status: "beyond_window", generation, nextSeqno: g.next, window: OPTIONS.seqnoWindow };
    if (seqno > g.next) {
      if (g.delivered.length + g.buffered.size >= cap) return { status: "input_full", generation, limit: cap };
      g.buffered.add(seqno);
      return { status: "buffered", generation };
    }
    if (g.delivered.length >= cap) return { status: "input_full", generation, limit: cap };
    g.delivered.push(seqno);
    g.next++;
    while (g.buffered.delete(g.next)) {
      g.delivered.push(g.next);
      g.next++;
    }
    return { status: "accepted", generation, startedGeneration: started };
  }

  /** Ends the latest generation when it has a delivered entry (a worker ran it); false otherwise. */
  end(): boolean {
    const g = this.latest();
    if (!g || g.ended || g.delivered.length === 0) return false;
    g.ended = true;
    return true;
  }
}

const ops = fc.array(
  fc.oneof(
    { weight: 8, arbitrary: fc.integer({ min: -1, max: 9 }).map((seqno): Op => ({ kind: "append", seqno })) },
    { weight: 1, arbitrary: fc.constant<Op>({ kind: "end" }) },
  ),
  { minLength: 1, maxLength: 24 },
);

async function runAgainst(bus: Bus, tenantId: string, sequence: Op[]): Promise<void> {
  const ref: RequestRef = { tenantId, requestId: randomUUID() };
  const model = new GateModel();
  for (const op of sequence) {
    if (op.kind === "end") {
      if (!model.end()) continue;
      const generation = model.generations.length;
      const epoch = (await bus.claim(ref, generation)).epoch;
      expect(await bus.endOutput(ref, generation, epoch, { ok: true })).toMatchObject({ ok: true });
      continue;
    }
    const seqno = BigInt(op.seqno);
    const want = model.append(seqno);
    const got = await bus.appendInput(ref, seqno, new TextEncoder().encode(String(op.seqno)), {});
    expect(got, `append ${op.seqno} after ${JSON.stringify(sequence)}`).toEqual(want);
  }
  for (const [i, g] of model.generations.entries()) {
    const input = await bus.readInput(ref, i + 1, 0);
    expect(input.map((e) => e.seqno)).toEqual(g.delivered);
    expect(input.map((e) => new TextDecoder().decode(e.payload))).toEqual(g.delivered.map(String));
  }
}

describe("fuzz: append_seqno gate against its reference model", () => {
  const tenant = `fuzz-${randomUUID().slice(0, 8)}`;

  it("memory bus", async () => {
    const bus = createMemoryBus(OPTIONS);
    const numRuns = fuzzRuns(3_000);
    await fc.assert(fc.asyncProperty(ops, (seq) => runAgainst(bus, tenant, seq)), { numRuns });
    reportFuzzCases("gate.memory_bus", numRuns);
    await bus.close();
  });

  const prefix = uniquePrefix("gate-fuzz");
  const redis = openBus(prefix, OPTIONS);
  afterAll(async () => {
    await redis.bus.close();
    const admin = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
    await deleteKeys(admin, prefix);
    await admin.quit();
  });

  it("Redis bus", async () => {
    // Each case is a few round trips per append: fewer cases in CI, scaled up by `npm run fuzz`.
    const numRuns = fuzzRuns(300);
    await fc.assert(fc.asyncProperty(ops, (seq) => runAgainst(redis.bus, tenant, seq)), { numRuns });
    reportFuzzCases("gate.redis_bus", numRuns);
  });
});
