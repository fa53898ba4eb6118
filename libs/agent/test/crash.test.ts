// An unexpected error inside the run engine (a fault injected into a dependency) ends the
// generation `internal` with aiserver.v1.ErrorDetails in embedded mode, whether it is thrown
// on the run's own path (a store write) or by a task beside it (a model attempt's admission).
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryBus, type Bus } from "@byok/bus";
import { createProviderAdapter, retryPolicy } from "@byok/providers";
import { createStore, type Store } from "@byok/store";
import { createLogger } from "@byok/telemetry";
import { runRequestMessage, startSimulator, type Simulator } from "@byok/testing";
import { AgentClientMessageSchema, ErrorDetails_Error, ErrorDetailsSchema } from "@byok/wire";
import { createInProcessDispatcher, createRunEngine, UNMETERED, type RunMeter } from "../src/index.js";

async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error("the generation never ended");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("an engine crash in embedded mode", () => {
  let sim: Simulator;
  let bus: Bus;
  let store: Store;

  beforeAll(async () => {
    sim = await startSimulator();
    bus = createMemoryBus({ seqnoWindow: 64, maxOutputFrames: 1000, maxInputEntries: 100, finishedRetentionMs: 60_000, sequenceStateTtlMs: 60_000 });
    store = await createStore({ driver: "pglite" });
  });
  afterAll(async () => {
    await bus.close();
    await store.close();
    await sim.close();
  });

  function dispatcherWith(faults: { store?: Partial<Store>; meter?: Partial<RunMeter> }) {
    const engine = createRunEngine({
      bus,
      store: { ...store, ...faults.store },
      adapterFor: (k) => createProviderAdapter(k),
      resolveTargets: () => ({
        ok: true as const,
        targets: [{ kind: "openai-chat" as const, model: "sim", baseUrl: `${sim.url}/v1`, apiKey: "sk-crash-test-key", credentialsSource: "gateway" as const }],
      }),
      retryPolicy: retryPolicy({ baseDelayMs: 5 }),
      timers: { reconnectGraceMs: 60_000, presenceCheckMs: 1_000, kvAckTimeoutMs: 200, toolTimeoutMs: 5_000, prewarmTtlMs: 5_000, snapshotIntervalMs: 250 },
      logger: createLogger({ service: "test", level: "silent" }),
      meter: { ...UNMETERED, ...faults.meter },
    });
    return createInProcessDispatcher(engine, bus, createLogger({ service: "test", level: "silent" }));
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

  it("a store write that throws on the run's path", async () => {
    const end = await runOnce("crash-store", {
      store: {
        appendHistory: async () => {
          throw new Error("injected fault: history write");
        },
      },
    });
    expectInternal(end);
  });

  it("a task beside the loop that throws (the attempt's budget admission)", async () => {
    const end = await runOnce("crash-meter", {
      meter: {
        admitAttempt: async () => {
          throw new Error("injected fault: admission");
        },
      },
    });
    expectInternal(end);
  });
});
