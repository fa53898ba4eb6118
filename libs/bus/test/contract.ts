// The bus contract: every Bus implementation runs these tests (memory and Redis alike).
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "@byok/testing";
import { GenerationGoneError, type Bus, type BusOptions, type RequestRef } from "../src/index.js";

export interface BusHarness {
  bus: Bus;
  /** Removes everything the harness created (e.g. the test's Redis keys). */
  cleanup(): Promise<void>;
}

export const CONTRACT_OPTIONS: BusOptions = {
  seqnoWindow: 8,
  maxOutputFrames: 50,
  maxInputEntries: 40,
  // Long enough that the steps after an end finish before the end entry expires on a loaded
  // 2-core CI machine (300 ms flaked: a late append then met an expired end and read `fenced`).
  finishedRetentionMs: 1_500,
  sequenceStateTtlMs: 60_000,
};

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);


export function busContract(name: string, factory: (opts: BusOptions) => Promise<BusHarness>): void {
  describe(`Bus contract: ${name}`, () => {
    let h: BusHarness;
    let bus: Bus;
    const tenant = `t-${randomUUID().slice(0, 8)}`;
    const ref = (): RequestRef => ({ tenantId: tenant, requestId: randomUUID() });

    beforeAll(async () => {
      h = await factory(CONTRACT_OPTIONS);
      bus = h.bus;
    });
    afterAll(async () => {
      await h.cleanup();
      await bus.close();
    });

    it("delivers shuffled and duplicated appends once each, in seqno order", async () => {
      const r = ref();
      const order = [3n, 1n, 3n, 2n, 5n, 1n, 4n, 2n];
      const outcomes = [];
      for (const s of order) outcomes.push(await bus.appendInput(r, s, bytes(`m${s}`), {}));
      expect(outcomes.map((o) => o.status)).toEqual([
        "buffered", "accepted", "duplicate", "accepted", "buffered", "duplicate", "accepted", "duplicate",
      ]);
      expect(outcomes[1]).toMatchObject({ generation: 1, startedGeneration: true });
      const input = await bus.readInput(r, 1, 0);
      expect(input.map((e) => [e.index, e.seqno, text(e.payload)])).toEqual([
        [0, 1n, "m1"], [1, 2n, "m2"], [2, 3n, "m3"], [3, 4n, "m4"], [4, 5n, "m5"],
      ]);
      expect((await bus.readInput(r, 1, 3)).map((e) => e.seqno)).toEqual([4n, 5n]);
    });

    it("refuses a seqno beyond the window without recording it", async () => {
      const r = ref();
      await bus.appendInput(r, 1n, bytes("a"), {});
      const o = await bus.appendInput(r, 2n + BigInt(CONTRACT_OPTIONS.seqnoWindow) + 1n, bytes("far"), {});
      expect(o).toMatchObject({ status: "beyond_window", nextSeqno: 2n, window: CONTRACT_OPTIONS.seqnoWindow });
      expect(await bus.appendInput(r, 2n + BigInt(CONTRACT_OPTIONS.seqnoWindow), bytes("edge"), {})).toMatchObject({ status: "buffered" });
    });

    it("lets seqno <= 0 bypass ordering", async () => {
      const r = ref();
      await bus.appendInput(r, 1n, bytes("a"), {});
      expect(await bus.appendInput(r, 0n, bytes("b"), {})).toMatchObject({ status: "accepted" });
      expect(await bus.appendInput(r, -1n, bytes("c"), {})).toMatchObject({ status: "accepted" });
      expect((await bus.readInput(r, 1, 0)).map((e) => text(e.payload))).toEqual(["a", "b", "c"]);
    });

    it("caps a generation's input", async () => {
      const r = ref();
      for (let i = 1; i <= CONTRACT_OPTIONS.maxInputEntries; i++) {
        expect(await bus.appendInput(r, BigInt(i), bytes("x"), {})).toMatchObject({ status: "accepted" });
      }
      expect(await bus.appendInput(r, BigInt(CONTRACT_OPTIONS.maxInputEntries + 1), bytes("x"), {})).toMatchObject({
        status: "input_full",
      });
    });

    it("starts a new generation only for seqno 1 after the latest one ended", async () => {
      const r = ref();
      await bus.appendInput(r, 1n, bytes("turn1"), {});
      expect(await bus.appendInput(r, 1n, bytes("dup"), {})).toMatchObject({ status: "duplicate", generation: 1 });
      const epoch = (await bus.claim(r, 1)).epoch;
      await bus.appendOutput(r, 1, epoch, [bytes("f1")], {});
      expect(await bus.endOutput(r, 1, epoch, { ok: true })).toMatchObject({ ok: true });
      expect(await bus.latestGeneration(r)).toEqual({ generation: 1, ended: true });
      const o = await bus.appendInput(r, 1n, bytes("turn2"), {});
      expect(o).toMatchObject({ status: "accepted", generation: 2, startedGeneration: true });
      expect(await bus.latestGeneration(r)).toEqual({ generation: 2, ended: false });
      expect((await bus.readInput(r, 2, 0)).map((e) => text(e.payload))).toEqual(["turn2"]);
      expect((await bus.readOutput(r, 2, 0, 10)).entries).toEqual([]);
      expect((await bus.readOutput(r, 1, 0, 10)).entries.map((e) => text(e.frame))).toEqual(["f1"]);
    });

    it("refuses a claim on a generation it never held with a GenerationGoneError", async () => {
      const r = ref();
      await expect(bus.claim(r, 1)).rejects.toBeInstanceOf(GenerationGoneError);
      await bus.appendInput(r, 1n, bytes("x"), {});
      await expect(bus.claim(r, 2)).rejects.toMatchObject({ name: "GenerationGoneError", generation: 2, reason: "missing" });
    });

    it("fences appends of a superseded epoch", async () => {
      const r = ref();
      await bus.appendInput(r, 1n, bytes("x"), {});
      const e1 = (await bus.claim(r, 1)).epoch;
      expect(await bus.appendOutput(r, 1, e1, [bytes("a")], {})).toEqual({ ok: true, nextIndex: 1 });
      const e2 = (await bus.claim(r, 1)).epoch;
      expect(e2).toBeGreaterThan(e1);
      expect(await bus.appendOutput(r, 1, e1, [bytes("stale")], {})).toEqual({ ok: false, reason: "fenced" });
      expect(await bus.endOutput(r, 1, e1, { ok: true })).toEqual({ ok: false, reason: "fenced" });
      expect(await bus.saveSnapshot(r, 1, e1, bytes("s"))).toBe(false);
      expect(await bus.appendOutput(r, 1, e2, [bytes("b"), bytes("c")], {})).toEqual({ ok: true, nextIndex: 3 });
      expect(await bus.saveSnapshot(r, 1, e2, bytes("snap"))).toBe(true);
      expect(text((await bus.loadSnapshot(r, 1))!)).toBe("snap");
      const read = await bus.readOutput(r, 1, 0, 100);
      expect(read.entries.map((e) => [e.index, text(e.frame)])).toEqual([[0, "a"], [1, "b"], [2, "c"]]);
      expect(read.end).toBeUndefined();
    });

    it("returns with each claim the live generation's snapshot, and whether the generation ended", async () => {
      const r = ref();
      await bus.appendInput(r, 1n, bytes("x"), {});
      const first = await bus.claim(r, 1);
      expect(first).toEqual({ epoch: first.epoch, ended: false, snapshot: undefined });
      expect(await bus.saveSnapshot(r, 1, first.epoch, bytes("s1"))).toBe(true);
      // Binary bytes come back as they were saved (no string decoding on the way).
      const binary = new Uint8Array([0, 255, 10, 13, 0xc3, 0x28]);
      expect(await bus.appendOutput(r, 1, first.epoch, [bytes("a")], {}, binary)).toEqual({ ok: true, nextIndex: 1 });
      const second = await bus.claim(r, 1);
      expect(second.epoch).toBeGreaterThan(first.epoch);
      expect(second.ended).toBe(false);
      expect([...second.snapshot!]).toEqual([...binary]);
      // The earlier owner cannot replace what the new one read.
      expect(await bus.saveSnapshot(r, 1, first.epoch, bytes("stale"))).toBe(false);
      await bus.endOutput(r, 1, second.epoch, { ok: true });
      expect(await bus.claim(r, 1)).toMatchObject({ ended: true, snapshot: undefined });
      // A generation older than the latest always ended.
      await bus.appendInput(r, 1n, bytes("turn2"), {});
      expect(await bus.claim(r, 1)).toMatchObject({ ended: true });
      expect(await bus.claim(r, 2)).toMatchObject({ ended: false, snapshot: undefined });
      // An empty snapshot reads as none on both buses.
      const e2 = (await bus.claim(r, 2)).epoch;
      expect(await bus.saveSnapshot(r, 2, e2, new Uint8Array(0))).toBe(true);
      expect((await bus.claim(r, 2)).snapshot).toBeUndefined();
    });

    it("caps output and reports the end after the last entry", async () => {
      const r = ref();
      await bus.appendInput(r, 1n, bytes("x"), {});
      const e = (await bus.claim(r, 1)).epoch;
      const many = Array.from({ length: CONTRACT_OPTIONS.maxOutputFrames }, (_, i) => bytes(`f${i}`));
      expect(await bus.appendOutput(r, 1, e, many, {})).toMatchObject({ ok: true });
      expect(await bus.appendOutput(r, 1, e, [bytes("over")], {})).toEqual({ ok: false, reason: "cap", limit: CONTRACT_OPTIONS.maxOutputFrames });
      const details = new Uint8Array([8, 41]);
      await bus.endOutput(r, 1, e, { ok: false, code: "resource_exhausted", message: "cap", errorDetails: details });
      const first = await bus.readOutput(r, 1, 0, 10);
      expect(first.entries).toHaveLength(10);
      expect(first.end).toBeUndefined();
      const rest = await bus.readOutput(r, 1, 10, 1000);
      expect(rest.entries).toHaveLength(CONTRACT_OPTIONS.maxOutputFrames - 10);
      expect(rest.end).toMatchObject({ ok: false, code: "resource_exhausted", message: "cap" });
      expect([...rest.end!.errorDetails!]).toEqual([8, 41]);
      expect(await bus.appendOutput(r, 1, e, [bytes("late")], {})).toEqual({ ok: false, reason: "ended" });
    });

    it("saves a snapshot carried by an append only with its frames, fenced", async () => {
      const r = ref();
      await bus.appendInput(r, 1n, bytes("x"), {});
      const e1 = (await bus.claim(r, 1)).epoch;
      expect(await bus.appendOutput(r, 1, e1, [bytes("a")], {}, bytes("s1"))).toEqual({ ok: true, nextIndex: 1 });
      expect(text((await bus.loadSnapshot(r, 1))!)).toBe("s1");
      const e2 = (await bus.claim(r, 1)).epoch;
      // The stale owner's append and its snapshot are refused together.
      expect(await bus.appendOutput(r, 1, e1, [bytes("stale")], {}, bytes("stale"))).toEqual({ ok: false, reason: "fenced" });
      expect(text((await bus.loadSnapshot(r, 1))!)).toBe("s1");
      // A capped append saves no snapshot either.
      const over = Array.from({ length: CONTRACT_OPTIONS.maxOutputFrames }, (_, i) => bytes(`f${i}`));
      expect(await bus.appendOutput(r, 1, e2, over, {}, bytes("capped"))).toMatchObject({ ok: false, reason: "cap" });
      expect(text((await bus.loadSnapshot(r, 1))!)).toBe("s1");
      expect(await bus.appendOutput(r, 1, e2, [bytes("b")], {}, bytes("s2"))).toEqual({ ok: true, nextIndex: 2 });
      expect(text((await bus.loadSnapshot(r, 1))!)).toBe("s2");
      await bus.endOutput(r, 1, e2, { ok: true });
      expect(await bus.appendOutput(r, 1, e2, [bytes("late")], {}, bytes("late"))).toEqual({ ok: false, reason: "ended" });
      expect(text((await bus.loadSnapshot(r, 1))!)).toBe("s2");
      expect((await bus.readOutput(r, 1, 0, 100)).entries.map((x) => text(x.frame))).toEqual(["a", "b"]);
    });

    it("returns the end with a full page that reaches it, and to a cursor at or past the end", async () => {
      const r = ref();
      await bus.appendInput(r, 1n, bytes("x"), {});
      const e = (await bus.claim(r, 1)).epoch;
      await bus.appendOutput(r, 1, e, [bytes("a"), bytes("b"), bytes("c")], {});
      expect(await bus.readOutput(r, 1, 3, 10)).toEqual({ entries: [] });
      expect(await bus.endOutput(r, 1, e, { ok: true })).toEqual({ ok: true, nextIndex: 3 });
      const page = await bus.readOutput(r, 1, 1, 2);
      expect(page.entries.map((x) => [x.index, text(x.frame)])).toEqual([[1, "b"], [2, "c"]]);
      expect(page.end).toEqual({ ok: true });
      const short = await bus.readOutput(r, 1, 0, 2);
      expect(short.entries.map((x) => text(x.frame))).toEqual(["a", "b"]);
      expect(short.end).toBeUndefined();
      expect(await bus.readOutput(r, 1, 3, 10)).toEqual({ entries: [], end: { ok: true } });
      expect(await bus.readOutput(r, 1, 7, 10)).toEqual({ entries: [], end: { ok: true } });
      // An ended generation without frames.
      const r2 = ref();
      await bus.appendInput(r2, 1n, bytes("x"), {});
      const e2 = (await bus.claim(r2, 1)).epoch;
      await bus.endOutput(r2, 1, e2, { ok: false, code: "cancelled", message: "gone" });
      expect(await bus.readOutput(r2, 1, 0, 10)).toEqual({ entries: [], end: { ok: false, code: "cancelled", message: "gone" } });
    });

    it("wakes watchers on new output and new input", async () => {
      const r = ref();
      let outputWakes = 0;
      let inputWakes = 0;
      const stopOut = bus.watch(r, () => outputWakes++);
      const stopIn = bus.watchInput(r, () => inputWakes++);
      await bus.appendInput(r, 1n, bytes("x"), {});
      await waitFor(async () => inputWakes > 0);
      const e = (await bus.claim(r, 1)).epoch;
      await bus.appendOutput(r, 1, e, [bytes("a")], {});
      await waitFor(async () => outputWakes > 0);
      stopOut();
      stopIn();
    });

    it("wakes readers when the request's first generation appears", async () => {
      const r = ref();
      let wakes = 0;
      const stop = bus.watch(r, () => wakes++);
      await bus.appendInput(r, 1n, bytes("x"), {});
      await waitFor(async () => wakes > 0);
      stop();
    });

    it("calls every watch once when it is live, without any write, also on a channel already live", async () => {
      const r = ref();
      const conversationId = `conv-${randomUUID()}`;
      const calls = { output: 0, input: 0, readers: 0, conversation: 0, second: 0 };
      const stops = [
        bus.watch(r, () => calls.output++),
        bus.watchInput(r, () => calls.input++),
        bus.watchReaders(r, () => calls.readers++),
        bus.watchConversation(r.tenantId, conversationId, () => calls.conversation++),
      ];
      await waitFor(async () => calls.output > 0 && calls.input > 0 && calls.readers > 0 && calls.conversation > 0, 5_000, "every watch called once live");
      // The request's channel is live now: a watch added to it is called too (no subscription
      // to confirm this time).
      stops.push(bus.watchInput(r, () => calls.second++));
      await waitFor(async () => calls.second > 0, 5_000, "a watch of a live channel called");
      // Stopped before its call: never called.
      let stoppedEarly = 0;
      bus.watchReaders(r, () => stoppedEarly++)();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(stoppedEarly).toBe(0);
      for (const stop of stops) stop();
    });

    it("keeps waking start watchers and request watchers after every request watch came and went", async () => {
      // Every request watch of the bus removed while a start watcher remains: on a Redis bus the
      // subscriber connection's last request channel is unsubscribed here, and its starts
      // channel must still be heard (ioredis leaves subscriber mode when an unsubscribe reply
      // counts 0, which Redis counts per channel kind: the channels must all be of one kind).
      const waiting = ref();
      const watched = ref();
      let startWakes = 0;
      const stopStart = bus.watchStart(waiting, () => startWakes++);
      let firstWakes = 0;
      const stopFirst = bus.watch(watched, () => firstWakes++);
      await bus.appendInput(watched, 1n, bytes("x"), {});
      await waitFor(async () => firstWakes > 0);
      stopFirst();
      // The unsubscribe's reply has arrived when a later watch's subscription is confirmed;
      // let it pass either way.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const base = startWakes;
      await bus.appendInput(waiting, 1n, bytes("y"), {});
      await waitFor(async () => startWakes > base, 5_000, "the start watcher woken after the request watches left");
      let outputWakes = 0;
      const stopOutput = bus.watch(watched, () => outputWakes++);
      const e = (await bus.claim(watched, 1)).epoch;
      await bus.appendOutput(watched, 1, e, [bytes("a")], {});
      await waitFor(async () => outputWakes > 0, 5_000, "a later request watch woken");
      stopOutput();
      stopStart();
    });

    it("wakes start watchers when a generation starts, not on its output, input or end", async () => {
      const r = ref();
      const other = ref();
      let wakes = 0;
      let otherWakes = 0;
      const stop = bus.watchStart(r, () => wakes++);
      const stopOther = bus.watchStart(other, () => otherWakes++);
      // A Redis bus wakes every start watcher once the shared channel is subscribed: let that pass.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const base = wakes;
      const otherBase = otherWakes;
      await bus.appendInput(r, 1n, bytes("x"), {});
      await waitFor(async () => wakes > base);
      const started = wakes;
      await bus.appendInput(r, 2n, bytes("y"), {});
      const e = (await bus.claim(r, 1)).epoch;
      await bus.appendOutput(r, 1, e, [bytes("a")], {});
      await bus.endOutput(r, 1, e, { ok: true });
      // A second watcher of the same request, stopped twice: the first one still wakes.
      const stopSecond = bus.watchStart(r, () => undefined);
      stopSecond();
      stopSecond();
      // A reused request id's next generation starts: woken again.
      await bus.appendInput(r, 1n, bytes("again"), {});
      await waitFor(async () => wakes > started);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(wakes).toBe(started + 1);
      expect(otherWakes).toBe(otherBase);
      stop();
      stopOther();
      await bus.appendInput(ref(), 1n, bytes("unrelated"), {});
      await bus.appendInput(other, 1n, bytes("z"), {});
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(wakes).toBe(started + 1);
      expect(otherWakes).toBe(otherBase);
    });

    it("carries trace context with input and output entries", async () => {
      const r = ref();
      const trace = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" };
      await bus.appendInput(r, 1n, bytes("x"), { trace });
      expect((await bus.readInput(r, 1, 0))[0]?.meta).toEqual({ trace });
      const e = (await bus.claim(r, 1)).epoch;
      await bus.appendOutput(r, 1, e, [bytes("a")], trace);
      expect((await bus.readOutput(r, 1, 0, 1)).entries[0]?.trace).toEqual(trace);
    });

    it("carries the run's principal with input entries, apart from the trace context, buffered or not", async () => {
      const r = ref();
      const trace = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" };
      const principal = { userId: "u-1", keyId: "k-1", originalRequestId: "orig-1", ghostMode: true };
      await bus.appendInput(r, 2n, bytes("second, buffered"), { trace, principal: { ...principal, ghostMode: false } });
      await bus.appendInput(r, 1n, bytes("first"), { trace, principal });
      await bus.appendInput(r, 0n, bytes("unordered, no principal"), { trace: {} });
      const [first, second, third] = await bus.readInput(r, 1, 0);
      expect(first?.meta).toEqual({ trace, principal });
      expect(second?.meta).toEqual({ trace, principal: { ...principal, ghostMode: false } });
      // No principal stored: readers fall back to ANONYMOUS_PRINCIPAL.
      expect(third?.meta).toEqual({ trace: {} });
    });

    it("shares reader presence and records when the last reader left", async () => {
      const r = ref();
      expect((await bus.readerPresence(r)).readers).toBe(0);
      const leaveA = await bus.addReader(r, "a", 10_000);
      const leaveB = await bus.addReader(r, "b", 10_000);
      expect((await bus.readerPresence(r)).readers).toBe(2);
      await leaveA();
      expect(await bus.readerPresence(r)).toMatchObject({ readers: 1 });
      const before = Date.now();
      await leaveB();
      const p = await bus.readerPresence(r);
      expect(p.readers).toBe(0);
      expect(p.lastLeftAt).toBeGreaterThanOrEqual(before - 5);
      // A reader back: lastLeftAt is only reported while nobody reads.
      const leaveC = await bus.addReader(r, "c", 10_000);
      expect(await bus.readerPresence(r)).toEqual({ readers: 1, lastLeftAt: undefined });
      await leaveC();
      expect((await bus.readerPresence(r)).lastLeftAt).toBeGreaterThanOrEqual(p.lastLeftAt ?? 0);
    });

    it("wakes the request's reader watchers when its last reader leaves", async () => {
      const r = ref();
      let wakes = 0;
      const stop = bus.watchReaders(r, () => wakes++);
      // A first round, so the one wake-up a subscription's confirmation may give (Redis) is
      // spent: the second round can only be woken by the leave itself.
      await (await bus.addReader(r, "a", 10_000))();
      await waitFor(async () => wakes > 0);
      wakes = 0;
      const leaveA = await bus.addReader(r, "a", 10_000);
      const leaveB = await bus.addReader(r, "b", 10_000);
      await leaveA();
      await leaveB();
      await waitFor(async () => wakes > 0);
      expect((await bus.readerPresence(r)).readers).toBe(0);
      stop();
    });

    it("wakes a conversation's watchers when a run marks itself current and when its prewarm is taken", async () => {
      const conv = `conv-${randomUUID()}`;
      let wakes = 0;
      const stop = bus.watchConversation(tenant, conv, () => wakes++);
      await bus.markConversationRun(tenant, conv, "req-a/1", 60_000);
      await waitFor(async () => wakes > 0);
      wakes = 0;
      await bus.markConversationRun(tenant, conv, "req-b/1", 60_000);
      await waitFor(async () => wakes > 0);
      expect(await bus.conversationRun(tenant, conv)).toBe("req-b/1");
      await bus.savePrewarm(tenant, conv, bytes("prepared"), 60_000);
      wakes = 0;
      expect(await bus.takePrewarm(tenant, conv)).toBeDefined();
      await waitFor(async () => wakes > 0);
      stop();
    });

    it("isolates tenants that use the same request id", async () => {
      const requestId = randomUUID();
      const a = { tenantId: `${tenant}-a`, requestId };
      const b = { tenantId: `${tenant}-b`, requestId };
      await bus.appendInput(a, 1n, bytes("secret-of-a"), {});
      expect(await bus.latestGeneration(b)).toBeUndefined();
      expect(await bus.readInput(b, 1, 0)).toEqual([]);
      expect(await bus.appendInput(b, 1n, bytes("b"), {})).toMatchObject({ status: "accepted", generation: 1 });
      expect((await bus.readInput(a, 1, 0)).map((e) => text(e.payload))).toEqual(["secret-of-a"]);
    });

    it("names a conversation's current run; a later mark supersedes, and marks expire", async () => {
      const conv = randomUUID();
      expect(await bus.conversationRun(tenant, conv)).toBeUndefined();
      await bus.markConversationRun(tenant, conv, "req-a/1", 10_000);
      expect(await bus.conversationRun(tenant, conv)).toBe("req-a/1");
      await bus.markConversationRun(tenant, conv, "req-b/1", 10_000);
      expect(await bus.conversationRun(tenant, conv)).toBe("req-b/1");
      expect(await bus.conversationRun(`${tenant}-other`, conv)).toBeUndefined();
      await bus.markConversationRun(tenant, conv, "req-c/1", 50);
      await waitFor(async () => (await bus.conversationRun(tenant, conv)) === undefined);
    });

    it("shares a conversation's prewarm once: taken by one run, then gone; expires", async () => {
      const conv = randomUUID();
      expect(await bus.hasPrewarm(tenant, conv)).toBe(false);
      await bus.savePrewarm(tenant, conv, bytes("prepared"), 10_000);
      expect(await bus.hasPrewarm(tenant, conv)).toBe(true);
      expect(await bus.takePrewarm(`${tenant}-other`, conv)).toBeUndefined();
      const [a, b] = await Promise.all([bus.takePrewarm(tenant, conv), bus.takePrewarm(tenant, conv)]);
      expect([a, b].filter(Boolean).map((x) => text(x!))).toEqual(["prepared"]);
      expect(await bus.hasPrewarm(tenant, conv)).toBe(false);
      await bus.savePrewarm(tenant, conv, bytes("short"), 50);
      await waitFor(async () => !(await bus.hasPrewarm(tenant, conv)));
    });

    it("drops an ended generation after the retention time", async () => {
      const r = ref();
      await bus.appendInput(r, 1n, bytes("x"), {});
      const e = (await bus.claim(r, 1)).epoch;
      await bus.appendOutput(r, 1, e, [bytes("a")], {});
      await bus.endOutput(r, 1, e, { ok: true });
      expect(await bus.latestGeneration(r)).toEqual({ generation: 1, ended: true });
      await waitFor(async () => (await bus.latestGeneration(r)) === undefined);
      expect((await bus.readOutput(r, 1, 0, 10)).entries).toEqual([]);
      // A late duplicate of the ended generation has no effect; seqno 1 starts the next one.
      expect(await bus.appendInput(r, 1n, bytes("again"), {})).toMatchObject({ status: "accepted", generation: 2 });
    });
  });
}
