// When the run snapshot is saved around a pass (run/snapshots.ts SnapshotSchedule): the budget
// lease of the attempt is saved while the provider is asked, and the pass's first text frame
// leaves in one fenced append with the snapshot, never behind a standalone save. The order of
// the bus writes and the provider's events is recorded as it happens (no clocks involved).
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import type { Bus } from "@byok/bus";
import { createProviderAdapter } from "@byok/providers";
import { runRequestMessage } from "@byok/testing";
import { AgentClientMessageSchema, AgentServerMessageSchema } from "@byok/wire";
import { UNMETERED, type RunMeter } from "../src/index.js";
import { EventQueue } from "../src/event-queue.js";
import { decodeSnapshot } from "../src/snapshot.js";
import { ackKv, describeFrame, suiteBus, suiteWorld, testEngine } from "./engine-fixture.js";

type Step =
  | { kind: "save"; meterTicket: unknown }
  | { kind: "append"; frames: string[]; meterTicket: unknown; carried: boolean }
  | { kind: "provider"; event: string };

const ticketOf = (snapshot: Uint8Array | undefined): unknown => decodeSnapshot(snapshot)?.meterTicket;

describe.each(["memory", "redis"] as const)("the snapshot around a pass (%s bus)", (busKind) => {
  const world = suiteWorld();
  const busOf = suiteBus(busKind, "snapshot-schedule");

  it("saves the budget lease while the provider is asked and sends the first text with no standalone save before it", async () => {
    const { sim, store } = world;
    const bus = busOf();
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
