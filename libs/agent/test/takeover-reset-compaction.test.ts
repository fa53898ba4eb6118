// Issue 9: what a run's prompt is built from survives a takeover, in embedded mode's set-up
// (memory bus, PGlite) and in distributed mode's (Redis bus, PostgreSQL), whether the run stores its content (retention `full`) or holds it only in memory
// (privacy mode: ghost mode / retention `none`, retention `metadata`):
// - a client's conversation_state with zero turns (a user who restored the chat to its very
//   beginning) leaves every stored turn of the conversation out of the prompt, for the first
//   owner and for the owner that takes the run over (docs/architecture.md "History");
// - a compaction after a provider's context-window refusal: an owner that takes over during the
//   summary pass re-runs that summary pass (same messages, same refused window), and one that
//   takes over after it re-runs the compacted pass (the summary and the recent tail, never the
//   uncompacted history).
import { randomUUID } from "node:crypto";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import type { Bus, RequestRef } from "@byok/bus";
import type { ContentMode } from "@byok/store";
import { runRequestMessage } from "@byok/testing";
import {
  AgentClientMessageSchema, AgentServerMessageSchema, ConversationStateStructureSchema, ConversationSummarySchema,
  type AgentServerMessage, type ConversationStateStructure,
} from "@byok/wire";
import { ackKv, describeFrame, simTarget, suiteBus, suiteWorld, TEST_TIMERS, testEngine, waitFor } from "./engine-fixture.js";

/** The upstream model the simulator gives a small context window (the route does not know it). */
const SMALL_MODEL = "sim-small";
const SMALL = 8_000;

type Message = { role: string; content: unknown };
type StateInit = MessageInitShape<typeof ConversationStateStructureSchema>;

const userTexts = (messages: Message[]) => messages.filter((m) => m.role === "user").map((m) => String(m.content));
const framesOf = async (bus: Bus, ref: RequestRef) => (await bus.readOutput(ref, 1, 0, 1000)).entries.map((e) => fromBinary(AgentServerMessageSchema, e.frame));
const checkpoints = (fs: AgentServerMessage[]) =>
  fs.flatMap((f) => (f.message.case === "conversationCheckpointUpdate" ? [f.message.value] : [])) as ConversationStateStructure[];

/** About `chars` characters of varied prose (every tokenizer counts it as ordinary text). */
function prose(tag: string, chars: number): string {
  const words = ["gateway", "provider", "context", "window", "summary", "turn", "model", "tokens", "history", "compaction", "request", "stream"];
  let out = `${tag}:`;
  for (let i = 0; out.length < chars; i++) out += ` ${words[(i * 7) % words.length]}${i % 13}`;
  return out;
}

describe.each([
  ["memory", "pglite"],
  ["redis", "postgres"],
] as const)("prompts across a takeover (%s bus, %s)", (busKind, storeKind) => {
  const world = suiteWorld({ sim: { contextWindows: { [SMALL_MODEL]: SMALL } }, store: storeKind });
  const busOf = suiteBus(busKind, "reset-compact");
  const promptsSince = (from: number) => world.sim.requests.slice(from).map((r) => (r.body as { messages: Message[] }).messages);

  const engine = (mode: ContentMode) =>
    testEngine(world.sim, busOf(), world.store, {
      content: { modeFor: async () => mode },
      // The route knows no window: only the provider's refusal can reveal that a pass is too long.
      resolveTargets: () => ({ ok: true as const, targets: [{ ...simTarget(world.sim), model: SMALL_MODEL }] }),
      // Every checkpoint is published (its acknowledgements never miss the wait on a loaded machine).
      timers: { ...TEST_TIMERS, kvAckTimeoutMs: 30_000 },
    });

  /** One turn run to its end by one owner, its content stored (retention `full`). */
  async function storedTurn(conversationId: string, text: string, answer: string, state?: StateInit): Promise<AgentServerMessage[]> {
    const bus = busOf();
    const ref = { tenantId: "t", requestId: `stored-${randomUUID()}` };
    world.sim.enqueue({ text: answer, usage: { inputTokens: 10, outputTokens: 10 } });
    const msg = runRequestMessage({ text, conversationId, modelId: "m", ...(state ? { conversationState: state } : {}) });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stop = ackKv(bus, ref);
    await engine("store").runGeneration(ref, 1).finally(stop);
    const frames = await framesOf(bus, ref);
    expect((await bus.readOutput(ref, 1, 0, 1000)).end).toEqual({ ok: true });
    return frames;
  }

  /** A turn in `mode` whose first owner stops once `cut()` holds (as a killed worker would); a second owner finishes it. */
  async function cutTurn(mode: ContentMode, conversationId: string, text: string, state: StateInit | undefined, cut: (frames: AgentServerMessage[]) => boolean) {
    const bus = busOf();
    const ref = { tenantId: "t", requestId: `cut-${randomUUID()}` };
    const msg = runRequestMessage({ text, conversationId, modelId: "m", ...(state ? { conversationState: state } : {}) });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stop = ackKv(bus, ref);
    try {
      const first = new AbortController();
      const firstRun = engine(mode).runGeneration(ref, 1, first.signal);
      await waitFor(async () => cut(await framesOf(bus, ref)));
      first.abort();
      await firstRun;
      await engine(mode).runGeneration(ref, 1);
    } finally {
      stop();
    }
    expect((await bus.readOutput(ref, 1, 0, 1000)).end).toEqual({ ok: true });
    return framesOf(bus, ref);
  }

  const streamedText = (fs: AgentServerMessage[]) => fs.some((f) => describeFrame(f).startsWith("text:"));

  it.each(["store", "ephemeral", "ephemeral_keep_conversation"] as const)(
    "zero turns (%s): neither the first owner nor the one that takes over sends the stored turns",
    async (mode) => {
      const conv = `c-zero-${busKind}-${mode}-${randomUUID().slice(0, 8)}`;
      const one = checkpoints(await storedTurn(conv, "FORGOTTEN-QUESTION", "FORGOTTEN-ANSWER")).at(-1)!;
      await storedTurn(conv, "FORGOTTEN-FOLLOW-UP", "FORGOTTEN-SECOND-ANSWER", one);
      world.sim.enqueue(
        { text: ["cut-a ", "cut-b ", "cut-c ", "cut-d"], chunkDelayMs: 150, usage: { inputTokens: 5, outputTokens: 4 } },
        { text: ["re-run"], usage: { inputTokens: 6, outputTokens: 2 } },
      );
      const before = world.sim.requests.length;
      const out = await cutTurn(mode, conv, "from the very beginning", {}, streamedText);
      const [firstAttempt, reRun] = promptsSince(before);
      expect(userTexts(firstAttempt!)).toEqual(["from the very beginning"]);
      expect(JSON.stringify(firstAttempt)).not.toContain("FORGOTTEN");
      expect(reRun).toEqual(firstAttempt);
      expect(out.map(describeFrame)).toContain("text:re-run");
      expect(checkpoints(out).at(-1)!.turns).toHaveLength(1);
    },
  );

  /** Turn one fits the small window; turn two (its history plus a short question) is refused as too long. */
  async function longFirstTurn(conv: string): Promise<ConversationStateStructure> {
    return checkpoints(await storedTurn(conv, prose("QUESTION-ONE", 14_000), prose("ANSWER-ONE", 8_000))).at(-1)!;
  }

  it.each(["store", "ephemeral"] as const)("refusal, then a takeover during the summary pass (%s): the summary pass re-runs", async (mode) => {
    const conv = `c-summary-cut-${busKind}-${mode}-${randomUUID().slice(0, 8)}`;
    const one = await longFirstTurn(conv);
    world.sim.enqueue(
      { text: ["SUMMARY-cut ", "more ", "more ", "more"], chunkDelayMs: 200, usage: { inputTokens: 5, outputTokens: 4 } },
      { text: "SUMMARY: the user asked question one at length.", usage: { inputTokens: 5, outputTokens: 5 } },
      { text: ["Answer two."], usage: { inputTokens: 5, outputTokens: 2 } },
    );
    const before = world.sim.requests.length;
    // Cut once the summary pass (the request after the refused one) reached the simulator.
    const out = await cutTurn(mode, conv, "QUESTION-TWO: and now?", one, () => world.sim.requests.length > before + 1);
    const sent = world.sim.requests.slice(before);
    expect(sent.map((r) => r.rejectedWith !== undefined)).toEqual([true, false, false, false]);
    const [refused, cutSummary, summary, pass] = promptsSince(before);
    expect(JSON.stringify(refused)).toContain("QUESTION-ONE");
    // The new owner re-runs the summary pass over the same history, within the refused window.
    expect(summary).toEqual(cutSummary);
    expect(JSON.stringify(summary)).toContain("QUESTION-ONE");
    expect(JSON.stringify(pass)).toContain("SUMMARY: the user asked question one");
    expect(JSON.stringify(pass)).toContain("QUESTION-TWO");
    expect(JSON.stringify(pass)).not.toContain("QUESTION-ONE");
    expect(out.map(describeFrame)).toContain("text:Answer two.");
  });

  it.each(["store", "ephemeral"] as const)("refusal, compaction, then a takeover during the compacted pass (%s): the re-run sends the same compacted prompt", async (mode) => {
    const conv = `c-compacted-cut-${busKind}-${mode}-${randomUUID().slice(0, 8)}`;
    const one = await longFirstTurn(conv);
    world.sim.enqueue(
      { text: "SUMMARY: the user asked question one at length.", usage: { inputTokens: 5, outputTokens: 5 } },
      { text: ["cut-a ", "cut-b ", "cut-c ", "cut-d"], chunkDelayMs: 150, usage: { inputTokens: 5, outputTokens: 4 } },
      { text: ["re-run"], usage: { inputTokens: 6, outputTokens: 2 } },
    );
    const before = world.sim.requests.length;
    const out = await cutTurn(mode, conv, "QUESTION-TWO: and now?", one, streamedText);
    const sent = world.sim.requests.slice(before);
    expect(sent.map((r) => r.rejectedWith !== undefined)).toEqual([true, false, false, false]);
    const [, , firstPass, reRun] = promptsSince(before);
    expect(JSON.stringify(firstPass)).toContain("SUMMARY: the user asked question one");
    expect(JSON.stringify(firstPass)).not.toContain("QUESTION-ONE");
    expect(reRun).toEqual(firstPass);
    const frames = out.map(describeFrame);
    expect(frames).toContain("text:re-run");
    // One compaction: summary_started and summary once, from the first owner; the new owner's
    // final checkpoint still carries the summary (and compacts no second time).
    expect(frames.filter((f) => f === "summary")).toHaveLength(1);
    const last = checkpoints(out).at(-1)!;
    expect(fromBinary(ConversationSummarySchema, last.summary!).summary).toBe("SUMMARY: the user asked question one at length.");
    const summaries = (await world.store.listHistory("t", conv)).filter((e) => e.kind === "summary");
    expect(summaries).toHaveLength(mode === "store" ? 1 : 0);
  });
});
