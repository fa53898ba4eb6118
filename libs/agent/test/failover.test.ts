// A route's targets in order: a target that fails before any output gives way to the next
// (no notice, a new attempt of the same model call); once output reached the client, a failure
// that is not retried (a content-policy refusal) ends the run, however many targets are left.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProviderTarget } from "@byok/protocol";
import { runRequestMessage } from "@byok/testing";
import { AgentClientMessageSchema, AgentServerMessageSchema } from "@byok/wire";
import { ackKv, describeFrame, simTarget, startEngineWorld, testEngine, type EngineWorld } from "./engine-fixture.js";

describe("failover between a route's targets", () => {
  let world: EngineWorld;
  beforeAll(async () => {
    world = await startEngineWorld();
  });
  afterAll(async () => world.close());

  async function runTurn(requestId: string) {
    const { sim, bus, store } = world;
    const target = (model: string): ProviderTarget => ({ ...simTarget(sim), model });
    const engine = testEngine(sim, bus, store, { resolveTargets: () => ({ ok: true, targets: [target("sim-first"), target("sim-second")] }) });
    const ref = { tenantId: "t", requestId };
    const msg = runRequestMessage({ text: "hello", conversationId: `c-${requestId}`, modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stopAcks = ackKv(bus, ref);
    await engine.runGeneration(ref, 1);
    stopAcks();
    const out = await bus.readOutput(ref, 1, 0, 1000);
    return { end: out.end, frames: out.entries.map((e) => describeFrame(fromBinary(AgentServerMessageSchema, e.frame))) };
  }

  it("a target refused before any output gives way to the next, without a notice", async () => {
    const before = world.sim.requests.length;
    world.sim.enqueue({ httpError: { status: 401 } }, { text: ["served by the second"] });
    const r = await runTurn("failover-before-output");
    expect(r.end).toEqual({ ok: true });
    expect(r.frames.filter((f) => f.startsWith("text:") || f.startsWith("notice:")).join("|")).toBe("text:served by the second");
    expect(world.sim.requests.slice(before).map((q) => (q.body as { model?: string }).model)).toEqual(["sim-first", "sim-second"]);
  });

  it("after output reached the client, a failure that is not retried ends the run on the same target", async () => {
    const before = world.sim.requests.length;
    world.sim.enqueue({ text: ["partial ", "answer"], streamError: { afterChunks: 2, code: "content_filter", message: "The response was filtered." } });
    const r = await runTurn("no-failover-after-output");
    expect(r.end).toMatchObject({ ok: false });
    expect(world.sim.requests.slice(before).map((q) => (q.body as { model?: string }).model)).toEqual(["sim-first"]);
  });
});
