// A paused owner resuming after a takeover cannot write Postgres: its history (and ledger)
// writes carry its fencing epoch and the store refuses them. The pause is modelled exactly:
// the first owner's snapshot save (its provider call started, no output yet) reaches the bus, but the owner sees
// the reply only after a second owner claimed the run and finished the turn (as after
// SIGSTOP/SIGCONT), by which time its provider stream has delivered the rest of the answer —
// so its next step records the stale answer before any bus write could tell it was fenced.
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Bus } from "@byok/bus";
import { isCallingModel } from "@byok/protocol";
import type { Store } from "@byok/store";
import { createMetrics } from "@byok/telemetry";
import { metricSum, parsePrometheus, runRequestMessage, type Simulator } from "@byok/testing";
import { AgentClientMessageSchema } from "@byok/wire";
import { decodeSnapshot } from "../src/snapshot.js";
import { ackKv, startEngineWorld, testEngine, type EngineWorld } from "./engine-fixture.js";

describe("store writes of a fenced-out owner", () => {
  let sim: Simulator;
  let bus: Bus;
  let store: Store;
  let world: EngineWorld;
  beforeAll(async () => {
    world = await startEngineWorld();
    ({ sim, bus, store } = world);
  });
  afterAll(async () => world.close());

  it("are refused: one assistant message for the pass, the new owner's", async () => {
    sim.enqueue(
      { text: ["stale-a ", "stale-b"], chunkDelayMs: 100, usage: { inputTokens: 5, outputTokens: 2 } },
      { text: ["re-run"], usage: { inputTokens: 6, outputTokens: 1 } },
    );
    const ref = { tenantId: "t", requestId: "fenced-writes" };
    const msg = runRequestMessage({ text: "answer once", conversationId: "c-fenced", modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stopAcks = ackKv(bus, ref);

    // The first owner's bus: the snapshot saved inside its provider call is written, its reply held.
    let resume!: () => void;
    const resumed = new Promise<void>((r) => (resume = r));
    // A snapshot is saved on its own or carried by a batch's append: both are held the same way.
    const holdAfter = async (snapshot: Uint8Array | undefined) => {
      if (!snapshot) return;
      const snap = decodeSnapshot(snapshot)!;
      if (isCallingModel(snap.state)) await resumed;
    };
    const pausedBus: Bus = {
      ...bus,
      saveSnapshot: async (...args) => {
        const r = await bus.saveSnapshot(...args);
        await holdAfter(args[3]);
        return r;
      },
      appendOutput: async (...args) => {
        const r = await bus.appendOutput(...args);
        await holdAfter(args[5]);
        return r;
      },
    };
    const firstMetrics = createMetrics({ processMetrics: false });
    const first = testEngine(sim, pausedBus, store, { metrics: firstMetrics }).runGeneration(ref, 1);
    // The whole stale answer reached the first owner while it waits on its append.
    await sim.waitForEnd(0);

    await testEngine(sim, bus, store).runGeneration(ref, 1); // the takeover finishes the turn
    expect((await bus.readOutput(ref, 1, 0, 1000)).end).toEqual({ ok: true });
    resume(); // SIGCONT: the first owner goes on with the stale answer
    await first;
    stopAcks();

    const assistant = (await store.listHistory("t", "c-fenced")).filter((h) => h.kind === "assistant" && !h.interrupted);
    expect(assistant.map((h) => (h.body as { text?: string }).text)).toEqual(["re-run"]);
    // The interrupted first attempt is on the ledger once, recorded by the new owner.
    expect(sim.requests).toHaveLength(2);
    // The first owner learnt it was fenced from the store, and counted it once under the store's label.
    const scraped = parsePrometheus(await firstMetrics.metrics());
    expect(metricSum(scraped, "byok_fenced_writes_total", { op: "store" })).toBe(1);
    expect(metricSum(scraped, "byok_fenced_writes_total")).toBe(1);
  });
});
