// How a new run starts and how its turn ends (run/generation-run.ts, run/input.ts, effects.ts
// `executeAll`): the calls that do not depend on each other go out together, so the client's
// first frame waits for as few round trips as there must be (docs/benchmarks.md "Run start in
// fewer round trips"), and the turn's end writes what it stores in one statement. Every
// bus and store call is recorded as it starts and as it settles (no clocks involved): two calls
// were in flight together when both started before either settled.
import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import type { Bus } from "@byok/bus";
import type { AppendAlongside, BlobPut, NewCheckpoint, Store } from "@byok/store";
import { runRequestMessage } from "@byok/testing";
import { AgentClientMessageSchema } from "@byok/wire";
import { UNMETERED, type RunMeter } from "../src/index.js";
import { ackKv, suiteBus, suiteWorld, testEngine } from "./engine-fixture.js";

type Mark = { call: string; at: "start" | "end"; snapshot?: boolean; blobs?: readonly BlobPut[]; checkpoint?: NewCheckpoint };

/** Wraps the named methods of `target` so each call's start and settling are recorded in `marks`. */
function recorded<T extends object>(target: T, names: readonly (keyof T & string)[], marks: Mark[], prefix: string): T {
  const out = Object.create(target) as T;
  for (const name of names) {
    const fn = target[name];
    if (typeof fn !== "function") throw new Error(`${name} is not a method`);
    Object.defineProperty(out, name, {
      value: (...args: unknown[]) => {
        const call = `${prefix}.${name}`;
        marks.push({
          call,
          at: "start",
          ...(name === "appendOutput" ? { snapshot: args[5] !== undefined } : {}),
          ...(name === "appendHistory" ? alongsideOf(args[2] as AppendAlongside | undefined) : {}),
        });
        const settled = () => void marks.push({ call, at: "end" });
        const r = (fn as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        r.then(settled, settled);
        return r;
      },
    });
  }
  return out;
}

function alongsideOf(a: AppendAlongside | undefined): Pick<Mark, "blobs" | "checkpoint"> {
  return { blobs: a?.blobs ?? [], ...(a?.checkpoint ? { checkpoint: a.checkpoint } : {}) };
}

/** Both calls were in flight at once: each started before the other's first call settled. */
function overlapped(marks: readonly Mark[], a: string, b: string): boolean {
  const startOf = (c: string) => marks.findIndex((m) => m.call === c && m.at === "start");
  const endOf = (c: string) => marks.findIndex((m) => m.call === c && m.at === "end");
  const [sa, sb, ea, eb] = [startOf(a), startOf(b), endOf(a), endOf(b)];
  return sa >= 0 && sb >= 0 && sa < eb && sb < ea;
}

describe.each(["memory", "redis"] as const)("a new run's start (%s bus)", (busKind) => {
  const world = suiteWorld();
  const busOf = suiteBus(busKind, "run-start");

  it("claims beside the input read, admits beside the prewarm take, writes the checkpoint's blobs, history and mark together, prepares the pass beside the first frame and saves no snapshot before the first frame", async () => {
    const { sim } = world;
    const bus = busOf();
    const marks: Mark[] = [];
    const recordingBus = recorded(bus as Bus & object, ["readInput", "claim", "takePrewarm", "markConversationRun", "appendOutput", "saveSnapshot"], marks, "bus");
    const store = recorded(world.store as Store & object, ["claimRun", "appendHistory", "putBlobs", "latestCheckpoint", "listHistory"], marks, "store");
    const admitting: RunMeter = {
      ...UNMETERED,
      admitRun: async () => {
        marks.push({ call: "meter.admitRun", at: "start" });
        await new Promise((r) => setTimeout(r, 20)); // long enough that a take after it could not overlap
        marks.push({ call: "meter.admitRun", at: "end" });
        return { ok: true };
      },
    };
    sim.enqueue({ text: ["Hello"], usage: { inputTokens: 5, outputTokens: 1 } });
    const stamp = `${busKind}-${Date.now()}`;
    const ref = { tenantId: "t", requestId: `start-${stamp}` };
    // No conversation_state: the conversation's stored checkpoint is read first.
    const msg = runRequestMessage({ text: "hi", conversationId: `c-start-${stamp}`, modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stopAcks = ackKv(bus, ref);
    await testEngine(sim, recordingBus, store, { meter: admitting }).runGeneration(ref, 1);
    stopAcks();
    expect((await bus.readOutput(ref, 1, 0, 1000)).end).toEqual({ ok: true });

    const firstAppend = marks.findIndex((m) => m.call === "bus.appendOutput" && m.at === "start");
    const beforeFirstFrame = marks.slice(0, firstAppend);
    expect(overlapped(marks, "bus.readInput", "bus.claim")).toBe(true);
    expect(overlapped(marks, "meter.admitRun", "bus.takePrewarm")).toBe(true);
    // The admission and the prewarm take wait for the store's claim (its fence holds first).
    const claimed = marks.findIndex((m) => m.call === "store.claimRun" && m.at === "end");
    expect(marks.findIndex((m) => m.call === "meter.admitRun")).toBeGreaterThan(claimed);
    expect(marks.findIndex((m) => m.call === "bus.takePrewarm")).toBeGreaterThan(claimed);
    // The checkpoint's blobs ride in the user entry's append (one statement), and are stored.
    expect(beforeFirstFrame.filter((m) => m.call === "store.putBlobs")).toEqual([]);
    const carried = beforeFirstFrame.find((m) => m.call === "store.appendHistory" && m.at === "start")?.blobs ?? [];
    expect(carried.length).toBeGreaterThan(0);
    for (const b of carried) expect(Buffer.from((await world.store.getBlobs(ref.tenantId, [b.id]).then(([b]) => b))!)).toEqual(Buffer.from(b.data));
    expect(overlapped(marks, "store.appendHistory", "bus.markConversationRun")).toBe(true);
    // The first frame goes out while the pass is prepared (its history read, which touches the conversation).
    expect(overlapped(marks, "bus.appendOutput", "store.listHistory")).toBe(true);
    // The checkpoint read's batch emitted nothing, and its snapshot waited for the next batch
    // (the first frame goes out as the pass starts; the snapshot is saved behind it).
    expect(beforeFirstFrame.filter((m) => m.call === "bus.saveSnapshot")).toEqual([]);
    expect(marks.slice(firstAppend).some((m) => m.call === "bus.saveSnapshot" || m.snapshot === true)).toBe(true);
  });
});

describe.each(["memory", "redis"] as const)("a turn's end (%s bus)", (busKind) => {
  const world = suiteWorld();
  const busOf = suiteBus(busKind, "turn-end");

  it("saves the final checkpoint in the assistant entry's append, one statement, and it is the conversation's latest", async () => {
    const { sim } = world;
    const bus = busOf();
    const marks: Mark[] = [];
    const store = recorded(world.store as Store & object, ["appendHistory", "saveCheckpoint", "putBlobs"], marks, "store");
    sim.enqueue({ text: ["Hello", " there"], usage: { inputTokens: 5, outputTokens: 2 } });
    const stamp = `${busKind}-${Date.now()}`;
    const ref = { tenantId: "t", requestId: `end-${stamp}` };
    const conversationId = `c-end-${stamp}`;
    const msg = runRequestMessage({ text: "hi", conversationId, modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stopAcks = ackKv(bus, ref);
    await testEngine(sim, bus, store).runGeneration(ref, 1);
    stopAcks();
    expect((await bus.readOutput(ref, 1, 0, 1000)).end).toEqual({ ok: true });

    expect(marks.filter((m) => m.call === "store.saveCheckpoint")).toEqual([]);
    const appends = marks.filter((m) => m.call === "store.appendHistory" && m.at === "start");
    expect(appends).toHaveLength(2); // the user's entry at the start, the assistant's at the end
    const carried = appends[1]!.checkpoint;
    expect(carried).toMatchObject({ tenantId: "t", conversationId, requestId: ref.requestId, generation: 1 });
    expect(appends[1]!.blobs!.length).toBeGreaterThan(0); // the final checkpoint's new blobs ride too
    expect(marks.filter((m) => m.call === "store.putBlobs")).toEqual([]);
    const stored = await world.store.latestCheckpoint("t", conversationId);
    expect(Array.from(stored!.state)).toEqual(Array.from(carried!.state));
  });
});
