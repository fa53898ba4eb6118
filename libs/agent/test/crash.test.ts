// An unexpected error inside the run engine (a fault injected into a dependency) ends the
// generation `internal` with aiserver.v1.ErrorDetails in embedded mode, whether it is thrown
// on the run's own path (a store write) or by a task beside it (a model attempt's admission).
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Bus } from "@byok/bus";
import type { Store } from "@byok/store";
import { createLogger } from "@byok/telemetry";
import { runRequestMessage, type Simulator } from "@byok/testing";
import { AgentClientMessageSchema, ErrorDetails_Error, ErrorDetailsSchema } from "@byok/wire";
import { createInProcessDispatcher, UNMETERED, type RunMeter } from "../src/index.js";
import { startEngineWorld, testEngine, waitFor, type EngineWorld } from "./engine-fixture.js";

describe("an engine crash in embedded mode", () => {
  let sim: Simulator;
  let bus: Bus;
  let store: Store;

  let world: EngineWorld;
  beforeAll(async () => {
    world = await startEngineWorld();
    ({ sim, bus, store } = world);
  });
  afterAll(async () => world.close());

  function dispatcherWith(faults: { store?: Partial<Store>; meter?: Partial<RunMeter> }) {
    const engine = testEngine(sim, bus, { ...store, ...faults.store }, { meter: { ...UNMETERED, ...faults.meter } });
    return createInProcessDispatcher(engine, bus, createLogger({ service: "test", level: "silent" }), { dedupeWindowMs: 60_000 });
  }

  async function runOnce(requestId: string, faults: Parameters<typeof dispatcherWith>[0]) {
    const ref = { tenantId: "t", requestId };
    const msg = runRequestMessage({ text: "hello", conversationId: `c-${requestId}`, modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const dispatcher = dispatcherWith(faults);
    await dispatcher.dispatch(ref, 1, {});
    try {
      return await waitFor(async () => (await bus.readOutput(ref, 1, 0, 1000)).end);
    } finally {
      await dispatcher.close();
    }
  }

  function expectInternal(end: { ok: boolean; code?: string; message?: string; errorDetails?: Uint8Array }) {
    expect(end).toMatchObject({ ok: false, code: "internal" });
    expect(end.message).toMatch(/internal error/);
    const details = fromBinary(ErrorDetailsSchema, end.errorDetails!);
    expect(details.error).toBe(ErrorDetails_Error.INTERNAL);
    expect(details.details).toMatchObject({ title: "Gateway error", isRetryable: true });
    expect(details.details!.detail).toMatch(/retry/);
    // The injected error's text is an internal detail, never shown to the client.
    expect(JSON.stringify(end)).not.toContain("injected fault");
  }

  const fault = (where: string) => async (): Promise<never> => {
    throw new Error(`injected fault: ${where}`);
  };
  it.each([
    ["a store write that throws on the run's path", "crash-store", { store: { appendHistory: fault("history write") } }],
    ["a task beside the loop that throws (the attempt's budget admission)", "crash-meter", { meter: { admitAttempt: fault("admission") } }],
  ] as const)("%s", async (_name, requestId, faults) => {
    expectInternal(await runOnce(requestId, faults));
  });
});
