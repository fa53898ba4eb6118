// Every phase change of a run is recorded: a `gateway.run.transition` event on the run span
// and a debug log line, both naming from, to and the cause, in the order the machine made them.
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ATTR, createLogger, createMemoryTracing, SPAN, SPAN_EVENT, type MemoryTracing } from "@byok/telemetry";
import { runRequestMessage } from "@byok/testing";
import { AgentClientMessageSchema } from "@byok/wire";
import { ackKv, startEngineWorld, testEngine, type EngineWorld } from "./engine-fixture.js";

describe("run phase transitions", () => {
  let world: EngineWorld;
  let tracing: MemoryTracing;
  beforeAll(async () => {
    tracing = createMemoryTracing();
    world = await startEngineWorld();
  });
  afterAll(async () => {
    await world.close();
    await tracing.shutdown();
  });

  it("are span events on the run span and debug log lines, from → to with their cause", async () => {
    const { sim, bus, store } = world;
    sim.enqueue({ text: ["all ", "done"], usage: { inputTokens: 3, outputTokens: 2 } });
    const ref = { tenantId: "t", requestId: "transitions" };
    const msg = runRequestMessage({ text: "hello", conversationId: "c-transitions", modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const lines: string[] = [];
    const logger = createLogger({ service: "test", level: "debug", destination: { write: (l: string) => void lines.push(l) } });
    const stopAcks = ackKv(bus, ref);
    await testEngine(sim, bus, store, { logger }).runGeneration(ref, 1);
    stopAcks();
    expect((await bus.readOutput(ref, 1, 0, 1000)).end).toEqual({ ok: true });

    const run = tracing.exporter.getFinishedSpans().find((s) => s.name === SPAN.run && s.attributes[ATTR.requestId] === ref.requestId)!;
    const events = run.events
      .filter((e) => e.name === SPAN_EVENT.runTransition)
      .map((e) => ({ from: e.attributes?.[ATTR.phaseFrom], to: e.attributes?.[ATTR.phaseTo], cause: e.attributes?.[ATTR.transitionCause] }));
    // The run_request starts the run (through importing when the store is asked for the
    // conversation first); the completed pass ends it, held in finishing behind the final
    // checkpoint until its blobs are acknowledged, or at once if they already were.
    expect(events[0]).toMatchObject({ from: "awaiting_run", cause: "run_request" });
    for (let i = 1; i < events.length; i++) expect(events[i]!.from).toBe(events[i - 1]!.to);
    const path = events.map((e) => e.to).join(">");
    expect(path).toMatch(/^(importing>)?model_call>(finishing>)?ended$/);

    const logged = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === "run phase changed")
      .map((l) => ({ from: l.from, to: l.to, cause: l.cause }));
    expect(logged).toEqual(events);
  });
});
