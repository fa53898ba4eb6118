// Takeover without loss at the engine level: the first owner stops mid-stream (as a dead worker
// would), a second owner claims the generation, restores the snapshot and re-runs the cut pass
// after a notice, never re-emitting frames the client already has; the takeover's metrics.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Bus } from "@byok/bus";
import type { Store } from "@byok/store";
import { createMetrics, type GatewayMetrics } from "@byok/telemetry";
import { metricSum, parsePrometheus, runRequestMessage, type Simulator } from "@byok/testing";
import { AgentClientMessageSchema, AgentServerMessageSchema } from "@byok/wire";
import type { RunEngine } from "../src/index.js";
import { ackKv, describeFrame, startEngineWorld, testEngine, waitFor, type EngineWorld } from "./engine-fixture.js";

describe("takeover of a live run", () => {
  let sim: Simulator;
  let bus: Bus;
  let store: Store;
  let engine: () => RunEngine;

  let world: EngineWorld;

  beforeAll(async () => {
    world = await startEngineWorld();
    ({ sim, bus, store } = world);
    engine = () => testEngine(sim, bus, store);
  });
  afterAll(async () => world.close());

  it("continues on the new owner with a notice between the attempts and fences the old one", async () => {
    sim.enqueue(
      { text: ["first-a ", "first-b ", "first-c ", "first-d"], chunkDelayMs: 150, usage: { inputTokens: 5, outputTokens: 4 } },
      { text: ["second attempt"], usage: { inputTokens: 6, outputTokens: 2 } },
    );
    const ref = { tenantId: "t", requestId: "takeover-1" };
    const msg = runRequestMessage({ text: "go", conversationId: "c-takeover", modelId: "m" });
    const appended = await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    expect(appended).toMatchObject({ status: "accepted", generation: 1 });
    const stopAcks = ackKv(bus, ref);

    const first = new AbortController();
    const firstRun = engine().runGeneration(ref, 1, first.signal);
    // Two text frames out: the second streamed after the pass's last snapshot (its first output).
    await waitFor(async () => {
      const out = await bus.readOutput(ref, 1, 0, 100);
      return out.entries.filter((e) => describeFrame(fromBinary(AgentServerMessageSchema, e.frame)).startsWith("text:")).length >= 2;
    });
    first.abort(); // the first owner stops mid-stream (its provider stream is cut)
    await firstRun;
    const seenBefore = (await bus.readOutput(ref, 1, 0, 100)).entries.length;
    expect(await bus.latestGeneration(ref)).toEqual({ generation: 1, ended: false });

    await engine().runGeneration(ref, 1);
    const out = await bus.readOutput(ref, 1, 0, 1000);
    expect(out.end).toEqual({ ok: true });
    stopAcks();
    const all = out.entries.map((e) => describeFrame(fromBinary(AgentServerMessageSchema, e.frame)));
    expect(all.findIndex((f) => f.startsWith("notice:"))).toBeGreaterThanOrEqual(seenBefore); // nothing the client had was re-emitted
    const frames = all.filter((f) => f !== "kvServerMessage");
    const noticeAt = frames.findIndex((f) => f.startsWith("notice:"));
    expect(frames.slice(0, noticeAt).filter((f) => f.startsWith("text:")).every((f) => f.startsWith("text:first-"))).toBe(true);
    expect(frames.slice(noticeAt + 1)).toEqual(["text:second attempt", "conversationCheckpointUpdate", "turnEnded"]);
    expect(new Set(out.entries.map((e) => e.index)).size).toBe(out.entries.length);

    // The old owner's epoch (1) is fenced.
    expect(await bus.appendOutput(ref, 1, 1, [new Uint8Array([1])], {})).toMatchObject({ ok: false });

    // History: the cut partial answer is kept, marked interrupted, and left out of the re-run's prompt.
    const history = await store.listHistory("t", "c-takeover");
    expect(history.map((h) => [h.kind, h.interrupted])).toEqual([["user", false], ["assistant", true], ["assistant", false]]);
    // It is exactly the text the client was sent before the notice, read back from the output
    // (the pass saved no snapshot after its first text), not the snapshot's.
    const sentBefore = out.entries
      .map((e) => fromBinary(AgentServerMessageSchema, e.frame).message)
      .slice(0, out.entries.findIndex((e) => describeFrame(fromBinary(AgentServerMessageSchema, e.frame)).startsWith("notice:")))
      .flatMap((m) => (m.case === "interactionUpdate" && m.value.message.case === "textDelta" ? [m.value.message.value.text] : []))
      .join("");
    expect(sentBefore).toMatch(/^first-a first-b /);
    expect((history[1]!.body as { text: string }).text).toBe(sentBefore);
    expect(JSON.stringify(sim.requests[1]!.body)).not.toContain("first-a");
  });

  // Metrics of two live owners (a paused worker and the one that took its run over), read from
  // each owner's exposition.
  it("counts the takeover and the end on the new owner, one fenced write on the old one, and no active run on either", async () => {
    sim.enqueue(
      { text: Array.from({ length: 40 }, (_, i) => `old${i} `), chunkDelayMs: 50, usage: { inputTokens: 5, outputTokens: 4 } },
      { text: ["taken over"], usage: { inputTokens: 6, outputTokens: 2 } },
    );
    const ref = { tenantId: "t", requestId: "metrics-takeover" };
    const msg = runRequestMessage({ text: "go", conversationId: "c-metrics-takeover", modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stopAcks = ackKv(bus, ref);
    const oldMetrics = createMetrics({ processMetrics: false });
    const newMetrics = createMetrics({ processMetrics: false });

    // The old owner streams; the new one claims the generation while the old one still runs.
    const oldRun = testEngine(sim, bus, store, { metrics: oldMetrics }).runGeneration(ref, 1);
    await waitFor(async () => {
      const out = await bus.readOutput(ref, 1, 0, 100);
      return out.entries.filter((e) => fromBinary(AgentServerMessageSchema, e.frame).message.case === "interactionUpdate").length >= 3;
    });
    await new Promise((r) => setTimeout(r, 300)); // a snapshot after the first output exists
    const scrape = async (m: GatewayMetrics) => parsePrometheus(await m.metrics());
    expect(metricSum(await scrape(oldMetrics), "byok_runs_active")).toBe(1);
    await testEngine(sim, bus, store, { metrics: newMetrics }).runGeneration(ref, 1);
    await oldRun;
    expect((await bus.readOutput(ref, 1, 0, 1000)).end).toEqual({ ok: true });
    stopAcks();

    const old = await scrape(oldMetrics);
    const taken = await scrape(newMetrics);
    expect(metricSum(old, "byok_runs_started_total")).toBe(1);
    expect(metricSum(old, "byok_fenced_writes_total")).toBe(1);
    expect(metricSum(old, "byok_runs_ended_total")).toBe(0);
    expect(metricSum(old, "byok_runs_active")).toBe(0);
    expect(metricSum(taken, "byok_takeovers_total")).toBe(1);
    expect(metricSum(taken, "byok_runs_started_total")).toBe(0);
    expect(metricSum(taken, "byok_runs_ended_total", { code: "ok" })).toBe(1);
    expect(metricSum(taken, "byok_runs_active")).toBe(0);
    expect(metricSum(taken, "byok_fenced_writes_total")).toBe(0);
  });
});
