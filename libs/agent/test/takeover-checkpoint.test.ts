// A takeover continues from what the first owner built its prompt from, in embedded mode's
// set-up (memory bus, PGlite) and in distributed mode's (Redis bus, PostgreSQL): the stored checkpoint a client without local state continues from (even
// when a newer checkpoint of the conversation was stored in between), and a compaction in
// progress (the summary pass re-runs over the same history, not as an ordinary pass).
import { randomUUID } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { beforeAll, describe, expect, it } from "vitest";
import type { Bus, RequestRef } from "@byok/bus";
import { blobKey } from "@byok/protocol";
import { runRequestMessage } from "@byok/testing";
import {
  AgentClientMessageSchema, AgentServerMessageSchema, ConversationStateStructureSchema,
  type AgentServerMessage, type ConversationStateStructure,
} from "@byok/wire";
import { ackKv, describeFrame, simTarget, TEST_TIMERS, suiteBus, suiteWorld, testEngine, waitFor, type EngineWorld } from "./engine-fixture.js";
/** Small enough that turn two (turn one's long question, tools, a short question) is compacted first. */
const WINDOW = 8_000;


type Message = { role: string; content: unknown };
const promptsOf = (world: EngineWorld, from: number) => world.sim.requests.slice(from).map((r) => (r.body as { messages: Message[] }).messages);
const frames = async (bus: Bus, ref: RequestRef) => (await bus.readOutput(ref, 1, 0, 1000)).entries.map((e) => fromBinary(AgentServerMessageSchema, e.frame));
const checkpoints = (fs: AgentServerMessage[]) =>
  fs.flatMap((f) => (f.message.case === "conversationCheckpointUpdate" ? [f.message.value] : [])) as ConversationStateStructure[];

describe.each([
  ["memory", "pglite"],
  ["redis", "postgres"],
] as const)("takeover from the same base (%s bus, %s)", (busKind, storeKind) => {
  // The simulator and the store of one engine world per block, and the block's bus.
  const world = suiteWorld({ store: storeKind });
  const busOf = suiteBus(busKind, "ckpt");
  let bus: Bus;
  beforeAll(() => {
    bus = busOf();
  });
  const engine = () =>
    testEngine(world.sim, bus, world.store, {
      resolveTargets: () => ({ ok: true as const, targets: [simTarget(world.sim, WINDOW)] }),
      // Every checkpoint is published (its acknowledgements never miss the wait on a loaded machine).
      timers: { ...TEST_TIMERS, kvAckTimeoutMs: 30_000 },
    });

  /** One turn without client state, run to its end by one owner. */
  async function wholeTurn(conversationId: string, text: string): Promise<AgentServerMessage[]> {
    const ref = { tenantId: "t", requestId: `whole-${randomUUID()}` };
    world.sim.enqueue({ text: [`answer to ${text.slice(0, 20)}`], usage: { inputTokens: 5, outputTokens: 2 } });
    const msg = runRequestMessage({ text, conversationId, modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stop = ackKv(bus, ref);
    await engine().runGeneration(ref, 1).finally(stop);
    return frames(bus, ref);
  }

  /** A turn whose first owner stops once `cut()` holds (as a killed worker would); a second owner finishes it. */
  async function cutTurn(conversationId: string, text: string, cut: (ref: RequestRef) => Promise<boolean>, between = async () => {}) {
    const ref = { tenantId: "t", requestId: `cut-${randomUUID()}` };
    const msg = runRequestMessage({ text, conversationId, modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stop = ackKv(bus, ref);
    try {
      const first = new AbortController();
      const firstRun = engine().runGeneration(ref, 1, first.signal);
      await waitFor(() => cut(ref));
      first.abort();
      await firstRun;
      await between();
      await engine().runGeneration(ref, 1);
    } finally {
      stop();
    }
    const out = await bus.readOutput(ref, 1, 0, 1000);
    expect(out.end).toEqual({ ok: true });
    return frames(bus, ref);
  }

  it("a client without local state: the new owner continues from the checkpoint the first owner read", async () => {
    const conv = `c-base-${busKind}-${randomUUID().slice(0, 8)}`;
    const one = checkpoints(await wholeTurn(conv, "question one")).at(-1)!;
    world.sim.enqueue(
      { text: ["cut-a ", "cut-b ", "cut-c ", "cut-d"], chunkDelayMs: 150, usage: { inputTokens: 5, outputTokens: 4 } },
      { text: ["re-run"], usage: { inputTokens: 6, outputTokens: 2 } },
    );
    const before = world.sim.requests.length;
    const out = await cutTurn(
      conv,
      "question two",
      async (ref) => (await frames(bus, ref)).some((f) => describeFrame(f).startsWith("text:")),
      // Meanwhile another device stored a newer checkpoint (restored to the beginning).
      () => world.store.saveCheckpoint({ tenantId: "t", conversationId: conv, requestId: "other-device", generation: 1, state: toBinary(ConversationStateStructureSchema, create(ConversationStateStructureSchema, {})) }),
    );
    const [firstAttempt, reRun] = promptsOf(world, before);
    expect(JSON.stringify(firstAttempt)).toContain("question one");
    expect(reRun).toEqual(firstAttempt);
    const last = checkpoints(out).at(-1)!;
    expect(last.turns).toHaveLength(2);
    expect(blobKey(last.turns[0]!)).toBe(blobKey(one.turns[0]!));
    expect(Array.from((await world.store.latestCheckpoint("t", conv))!.state)).toEqual(Array.from(toBinary(ConversationStateStructureSchema, last)));
  });

  it("a compaction in progress: the new owner re-runs the summary pass over the same history", async () => {
    const conv = `c-compact-${busKind}-${randomUUID().slice(0, 8)}`;
    await wholeTurn(conv, `QUESTION-ONE: ${Array.from({ length: 2_500 }, (_, i) => `word${i}`).join(" ")}`);
    world.sim.enqueue(
      { text: ["SUMMARY-cut ", "more ", "more ", "more"], chunkDelayMs: 200, usage: { inputTokens: 5, outputTokens: 4 } },
      { text: ["SUMMARY: question one, at length."], usage: { inputTokens: 5, outputTokens: 5 } },
      { text: ["answer two"], usage: { inputTokens: 6, outputTokens: 2 } },
    );
    const before = world.sim.requests.length;
    const out = await cutTurn(conv, "QUESTION-TWO", async () => world.sim.requests.length > before);
    const [cutSummary, summary, pass] = promptsOf(world, before);
    expect(summary).toEqual(cutSummary);
    expect(JSON.stringify(summary)).toContain("QUESTION-ONE");
    expect(JSON.stringify(pass)).toContain("SUMMARY: question one, at length.");
    expect(JSON.stringify(pass)).not.toContain("QUESTION-ONE");
    expect(out.map(describeFrame)).toContain("text:answer two");
    const last = checkpoints(out).at(-1)!;
    expect(last.summary?.length ?? 0).toBeGreaterThan(0);
    expect(last.tokenDetails?.maxTokens).toBe(WINDOW);
  });
});
