// A worker that dies after a provider attempt ended (the run moved on to the tool call) but
// before that attempt's ledger row and budget lease were settled must not lose its usage: the
// attempt rides in the run snapshot until it is settled, and the worker that takes the run
// over settles it. The first owner's meter never finishes a settle (it died writing); the
// second owner's records what the engine hands the metering port.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Bus } from "@byok/bus";
import type { Store } from "@byok/store";
import { execResultMessage, runRequestMessage, waitFor, type Simulator } from "@byok/testing";
import { AgentClientMessageSchema, AgentServerMessageSchema } from "@byok/wire";
import { UNMETERED, type AttemptInfo, type AttemptResult, type RunMeter } from "../src/index.js";
import { startEngineWorld, suiteBus, testEngine, type EngineWorld } from "./engine-fixture.js";

describe.each(["memory", "redis"] as const)("an ended attempt its owner did not settle (%s bus)", (busKind) => {
  let sim: Simulator;
  let store: Store;
  let world: EngineWorld;
  const busOf = suiteBus(busKind, "takeover-settle");
  beforeAll(async () => {
    world = await startEngineWorld();
    ({ sim, store } = world);
  });
  afterAll(async () => world.close());

  it("is settled by the worker that takes the run over, once, with the provider's usage", async () => {
    sim.enqueue(
      { toolCalls: [{ name: "Read", arguments: JSON.stringify({ path: "a.txt" }) }], usage: { inputTokens: 11, outputTokens: 4 } },
      { text: ["done"], usage: { inputTokens: 21, outputTokens: 3 } },
    );
    const bus: Bus = busOf();
    const ref = { tenantId: "t", requestId: `settle-${busKind}-${Date.now()}` };
    const msg = runRequestMessage({ text: "read a.txt", conversationId: `c-settle-${busKind}-${Date.now()}`, modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    // This client acknowledges no checkpoint blob: each checkpoint is skipped after its wait.

    const tickets = ["lease-1", "lease-2"];
    const admit: RunMeter["admitAttempt"] = async () => ({ ok: true, ticket: tickets.shift() });
    // The first owner dies while settling: its settle never completes.
    const dying: RunMeter = { ...UNMETERED, admitAttempt: admit, settleAttempt: () => new Promise<void>(() => undefined) };
    const first = new AbortController();
    const firstRun = testEngine(sim, bus, store, { meter: dying }).runGeneration(ref, 1, first.signal);
    const exec = await waitFor(async () => {
      for (const e of (await bus.readOutput(ref, 1, 0, 100)).entries) {
        const m = fromBinary(AgentServerMessageSchema, e.frame);
        if (m.message.case === "execServerMessage") return m.message.value;
      }
      return undefined;
    }, 10_000, "the exec request of the first pass's tool call");
    first.abort();
    await firstRun;

    const settled: { a: AttemptInfo; ticket: unknown; r: AttemptResult }[] = [];
    const recording: RunMeter = { ...UNMETERED, admitAttempt: admit, settleAttempt: async (a, ticket, r) => void settled.push({ a, ticket, r }) };
    const second = testEngine(sim, bus, store, { meter: recording }).runGeneration(ref, 1);
    // The client answers the exec request it got from the first owner.
    await bus.appendInput(
      ref,
      2n,
      toBinary(AgentClientMessageSchema, execResultMessage({ id: exec.id, execId: exec.execId, result: { case: "readResult", value: { result: { case: "error", value: { path: "a.txt", error: "not found" } } } } })),
      {},
    );
    await second;
    expect((await bus.readOutput(ref, 1, 0, 1000)).end).toEqual({ ok: true });
    // The first pass (settled by the taker, with its own ticket and the provider's usage), then the second.
    expect(settled.map((s) => [s.a.modelCallId, s.a.attempt, s.ticket, s.r.outcome, s.r.usage.inputTokens, s.r.usage.estimated])).toEqual([
      ["g1m1", 1, "lease-1", "ok", 11, false],
      ["g1m2", 1, "lease-2", "ok", 21, false],
    ]);
  });
});
