// What the engine tests share: one fixed simulator target, short timers, and the client's side
// of the KV handshake (every set_blob_args acknowledged through the input).
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createMemoryBus, type Bus, type RequestRef } from "@byok/bus";
import { createProviderAdapter, retryPolicy } from "@byok/providers";
import { createStore, type Store } from "@byok/store";
import { createLogger } from "@byok/telemetry";
import { startSimulator, type Simulator } from "@byok/testing";
import { AgentClientMessageSchema, AgentServerMessageSchema, type AgentServerMessage } from "@byok/wire";
import { createRunEngine, type RunEngine, type RunEngineDeps } from "../src/index.js";

/** What an in-process engine test runs against: a simulator, a memory bus and an in-memory PGlite store. */
export interface EngineWorld {
  sim: Simulator;
  bus: Bus;
  store: Store;
  close(): Promise<void>;
}

export async function startEngineWorld(): Promise<EngineWorld> {
  const sim = await startSimulator();
  const bus = createMemoryBus({ seqnoWindow: 64, maxOutputFrames: 1000, maxInputEntries: 100, finishedRetentionMs: 60_000, sequenceStateTtlMs: 60_000 });
  const store = await createStore({ driver: "pglite" });
  return {
    sim,
    bus,
    store,
    async close() {
      await bus.close();
      await store.close();
      await sim.close();
    },
  };
}

export function testEngine(sim: Simulator, bus: Bus, store: Store, extra: Partial<RunEngineDeps> = {}): RunEngine {
  return createRunEngine({
    bus,
    store,
    adapterFor: (k) => createProviderAdapter(k),
    // One fixed gateway target: routing itself is tested where it lives (libs/providers, tenancy).
    resolveTargets: () => ({
      ok: true as const,
      targets: [{ kind: "openai-chat" as const, model: "sim", baseUrl: `${sim.url}/v1`, apiKey: "sk-engine-test-key", credentialsSource: "gateway" as const }],
    }),
    retryPolicy: retryPolicy({ baseDelayMs: 5 }),
    timers: { reconnectGraceMs: 60_000, presenceCheckMs: 1_000, kvAckTimeoutMs: 200, toolTimeoutMs: 5_000, prewarmTtlMs: 5_000, snapshotIntervalMs: 250, conversationRunTtlMs: 3_600_000, deltaCoalesceMs: 20 },
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
