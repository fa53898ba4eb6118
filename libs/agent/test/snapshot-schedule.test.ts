// When the run snapshot is saved around a pass (run/snapshots.ts SnapshotSchedule): the budget
// lease of the attempt is saved while the provider is asked, and the pass's first text frame
// leaves in one fenced append with the snapshot, never behind a standalone save. The order of
// the bus writes and the provider's events is recorded as it happens (no clocks involved).
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import type { Bus } from "@byok/bus";
import { createProviderAdapter } from "@byok/providers";
import { runRequestMessage } from "@byok/testing";
import { AgentClientMessageSchema, AgentServerMessageSchema, ConversationActionSchema, SummarizeActionSchema, type ConversationAction } from "@byok/wire";
import { UNMETERED, type RunMeter } from "../src/index.js";
import { EventQueue } from "../src/event-queue.js";
import { decodeSnapshot } from "../src/snapshot.js";
import { ackKv, describeFrame, suiteBus, suiteWorld, testEngine } from "./engine-fixture.js";

type Step =
  | { kind: "save"; meterTicket: unknown }
  | { kind: "append"; frames: string[]; meterTicket: unknown; carried: boolean }
  | { kind: "provider"; event: string };

const ticketOf = (snapshot: Uint8Array | undefined): unknown => decodeSnapshot(snapshot)?.meterTicket;

/** The bus, with its snapshot saves and output appends recorded in order. */
function record(bus: Bus): { steps: Step[]; recording: Bus } {
  const steps: Step[] = [];
  const recording: Bus = {
    ...bus,
    saveSnapshot: async (...args) => {
      steps.push({ kind: "save", meterTicket: ticketOf(args[3]) });
      return bus.saveSnapshot(...args);
    },
    appendOutput: async (...args) => {
      const frames = args[3].map((f) => describeFrame(fromBinary(AgentServerMessageSchema, f)));
      steps.push({ kind: "append", frames, meterTicket: ticketOf(args[5]), carried: args[5] !== undefined });
      return bus.appendOutput(...args);
    },
  };
  return { steps, recording };
}

/** A run request carrying `action` instead of a user message. */
function runWithAction(conversationId: string, action: ConversationAction["action"]) {
  const msg = runRequestMessage({ text: "", conversationId, modelId: "m" });
  if (msg.message.case !== "runRequest") throw new Error("unreachable");
  msg.message.value.action = create(ConversationActionSchema, { action });
  return msg;
}

describe.each(["memory", "redis"] as const)("the snapshot around a pass (%s bus)", (busKind) => {
  const world = suiteWorld();
  const busOf = suiteBus(busKind, "snapshot-schedule");

  it("saves the budget lease while the provider is asked and sends the first text with no standalone save before it", async () => {
    const { sim, store } = world;
    const bus = busOf();
    const { steps, recording } = record(bus);
    // The lease is granted after the client acknowledged the checkpoint's blobs (their input
    // events save snapshots of their own), so only the lease itself can cause the save before
    // the provider's first event.
    const meter: RunMeter = {
      ...UNMETERED,
      admitAttempt: async () => {
        await new Promise((r) => setTimeout(r, 50));
        return { ok: true, ticket: "lease-1" };
      },
    };
    const adapterFor = (k: Parameters<typeof createProviderAdapter>[0]) => {
      const real = createProviderAdapter(k);
      return {
        ...real,
        async *stream(req: Parameters<typeof real.stream>[0]) {
          for await (const ev of real.stream(req)) {
            steps.push({ kind: "provider", event: ev.type });
            yield ev;
          }
        },
      };
    };
    // The provider's first text comes a while after its response started (a role chunk first).
    sim.enqueue({ text: ["Hello ", "world"], chunkDelayMs: 100, usage: { inputTokens: 5, outputTokens: 2 } });
    const ref = { tenantId: "t", requestId: `snap-${busKind}-${Date.now()}` };
    const msg = runRequestMessage({ text: "hi", conversationId: `c-snap-${busKind}-${Date.now()}`, modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stopAcks = ackKv(bus, ref);
    await testEngine(sim, recording, store, { meter, adapterFor }).runGeneration(ref, 1);
    stopAcks();
    expect((await bus.readOutput(ref, 1, 0, 1000)).end).toEqual({ ok: true });

    const firstProvider = steps.findIndex((s) => s.kind === "provider");
    const firstText = steps.findIndex((s) => s.kind === "append" && s.frames.includes("text:Hello"));
    expect(firstProvider).toBeGreaterThan(0);
    expect(firstText).toBeGreaterThan(firstProvider);
    // The lease was in a saved snapshot before the provider's first event.
    expect(steps.slice(0, firstProvider).some((s) => s.kind !== "provider" && s.meterTicket === "lease-1")).toBe(true);
    // Between the provider's first event and the first text frame: no standalone save.
    expect(steps.slice(firstProvider, firstText).filter((s) => s.kind === "save")).toEqual([]);
    // The first output of the attempt carries the snapshot (the next owner learns the client saw output).
    expect(steps[firstText]).toMatchObject({ kind: "append", carried: true });
  });

  // The stream holds what such a pass sent; a takeover reads it back (takeover.test.ts).
  it("saves nothing more while a pass only streams text, however long it streams", async () => {
    const { sim, store } = world;
    const bus = busOf();
    const { steps, recording } = record(bus);
    // 8 deltas over ~700 ms: the summary-pass interval (250 ms in tests) passes twice over.
    sim.enqueue({ text: Array.from({ length: 8 }, (_, i) => `w${i} `), chunkDelayMs: 100, usage: { inputTokens: 5, outputTokens: 8 } });
    const ref = { tenantId: "t", requestId: `stream-${busKind}-${Date.now()}` };
    const msg = runRequestMessage({ text: "hi", conversationId: `c-stream-${busKind}-${Date.now()}`, modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stopAcks = ackKv(bus, ref);
    await testEngine(sim, recording, store).runGeneration(ref, 1);
    stopAcks();
    expect((await bus.readOutput(ref, 1, 0, 1000)).end).toEqual({ ok: true });
    const texts = steps.flatMap((s, i) => (s.kind === "append" && s.frames.every((f) => f.startsWith("text:")) ? [i] : []));
    expect(texts.length).toBeGreaterThanOrEqual(4); // paced: several appends, not one
    // The first output carries the snapshot; the rest of the pass's text goes without one.
    expect(steps[texts[0]!]).toMatchObject({ carried: true });
    expect(texts.slice(1).map((i) => steps[i])).toEqual(texts.slice(1).map(() => expect.objectContaining({ carried: false })));
    expect(steps.slice(texts[0]!, texts.at(-1)!).filter((s) => s.kind === "save")).toEqual([]);
  });

  it("saves a summary pass's progress every interval (it streams nothing a takeover could read back)", async () => {
    const { sim, store } = world;
    const bus = busOf();
    const conversationId = `c-sum-${busKind}-${Date.now()}`;
    sim.enqueue(
      { text: "We are building a parser.", usage: { inputTokens: 5, outputTokens: 5 } },
      { text: Array.from({ length: 8 }, (_, i) => `s${i} `), chunkDelayMs: 100, usage: { inputTokens: 9, outputTokens: 8 } },
    );
    const turn = async (requestId: string, msg: ReturnType<typeof runRequestMessage>, engineBus: Bus) => {
      const ref = { tenantId: "t", requestId };
      await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
      const stopAcks = ackKv(bus, ref);
      await testEngine(sim, engineBus, store).runGeneration(ref, 1);
      stopAcks();
      expect((await bus.readOutput(ref, 1, 0, 1000)).end).toEqual({ ok: true });
    };
    await turn(`sum-a-${busKind}-${Date.now()}`, runRequestMessage({ text: "let's build a parser", conversationId, modelId: "m" }), bus);
    const { steps, recording } = record(bus);
    await turn(`sum-b-${busKind}-${Date.now()}`, runWithAction(conversationId, { case: "summarizeAction", value: create(SummarizeActionSchema) }), recording);
    const started = steps.findIndex((s) => s.kind === "append" && s.frames.includes("summaryStarted"));
    const summary = steps.findIndex((s) => s.kind === "append" && s.frames.includes("summary"));
    expect(started).toBeGreaterThanOrEqual(0);
    expect(summary).toBeGreaterThan(started);
    // ~700 ms of summary pass, nothing streamed: saved on its own at least twice meanwhile.
    expect(steps.slice(started + 1, summary).filter((s) => s.kind === "save").length).toBeGreaterThanOrEqual(2);
  });
});

describe("the run's event queue", () => {
  it("returns nothing new to a taker it nudges, now or at its next take, and items as usual", async () => {
    const q = new EventQueue<number>();
    const waiting = q.take();
    q.nudge();
    expect(await waiting).toBeUndefined();
    q.nudge();
    expect(await q.take()).toBeUndefined();
    q.nudge();
    expect(await q.take(60_000)).toBeUndefined(); // a waiting window does not hold a nudge back
    q.nudge();
    q.push(1);
    expect(await q.take()).toEqual([1]); // items win, and the nudge is spent
    const next = q.take();
    q.push(2);
    expect(await next).toEqual([2]);
  });
});
