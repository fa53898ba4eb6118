// Redis-only tests on top of the shared contract: key layout, connections, presence across
// instances, retention TTLs, binary safety.
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandCount, monitorCommands } from "@byok/testing";
import { requestKeys, startsChannel, type Bus, type CarriedOutput, type RequestRef } from "../src/index.js";
import { CONTRACT_OPTIONS } from "./contract.js";
import { REDIS_URL, deleteKeys, openBus, uniquePrefix, waitFor } from "./redis-harness.js";

const calculateSlot = createRequire(import.meta.url)("cluster-key-slot") as (key: string) => number;
const prefix = uniquePrefix("infra");
const bytes = (s: string) => new TextEncoder().encode(s);
const ref = (requestId = randomUUID()): RequestRef => ({ tenantId: "default", requestId });

function allKeys(r: RequestRef, generation: number): string[] {
  const k = requestKeys(prefix, r);
  return [k.seq, k.readers, k.left, k.channel, ...Object.values(k.generation(generation))];
}

describe("Redis bus: infrastructure", () => {
  let admin: Redis;
  let a: { bus: Bus; name: string };
  let b: { bus: Bus; name: string };

  beforeAll(() => {
    admin = new Redis(REDIS_URL);
    a = openBus(prefix, CONTRACT_OPTIONS);
    b = openBus(prefix, CONTRACT_OPTIONS);
  });
  afterAll(async () => {
    await Promise.all([a.bus.close(), b.bus.close()]);
    await deleteKeys(admin, prefix);
    await admin.quit();
  });

  it("fences a stale owner in the output stream's ids: Redis refuses its XADD after a takeover and anyone's after the end", async () => {
    const r = ref();
    const out = requestKeys(prefix, r).generation(1).output;
    await a.bus.appendInput(r, 1n, bytes("x"), {});
    const e1 = (await a.bus.claim(r, 1)).epoch;
    expect(await a.bus.appendOutput(r, 1, e1, [bytes("a")], {})).toEqual({ ok: true, nextIndex: 1 });
    const e2 = (await b.bus.claim(r, 1)).epoch;
    // The id the old owner would write next is below the last id the claim set: Redis itself
    // refuses it, whatever the writer checked before.
    await expect(admin.xadd(out, `2-${2 * e1 + 1}`, "f", "stale")).rejects.toThrow(/equal or smaller/);
    expect(await a.bus.appendOutput(r, 1, e1, [bytes("stale")], {})).toEqual({ ok: false, reason: "fenced" });
    expect(await b.bus.appendOutput(r, 1, e2, [bytes("b")], {})).toEqual({ ok: true, nextIndex: 2 });
    expect(await a.bus.appendOutput(r, 1, e1, [bytes("stale")], {})).toEqual({ ok: false, reason: "fenced" });
    expect(await a.bus.appendOutput(r, 1, e1, [bytes("stale"), bytes("batch")], {}, bytes("snap"))).toEqual({ ok: false, reason: "fenced" });
    // Entry ids: position in the millisecond part, the writer's epoch in the sequence part.
    expect((await admin.xrange(out, "-", "+")).map(([id]) => id)).toEqual([`1-${2 * e1 + 1}`, `2-${2 * e2 + 1}`]);
    expect(await b.bus.endOutput(r, 1, e2, { ok: true })).toEqual({ ok: true, nextIndex: 2 });
    await expect(admin.xadd(out, `4-${2 * e2 + 1}`, "f", "late")).rejects.toThrow(/exhausted/);
    // A claim of the ended generation does not reopen it.
    const e3 = (await a.bus.claim(r, 1)).epoch;
    expect(await a.bus.appendOutput(r, 1, e3, [bytes("late")], {})).toEqual({ ok: false, reason: "ended" });
    const read = await b.bus.readOutput(r, 1, 0, 10);
    expect(read.entries.map((x) => [x.index, new TextDecoder().decode(x.frame)])).toEqual([[0, "a"], [1, "b"]]);
    expect(read.end).toEqual({ ok: true });
  });

  it("carries a lone appended frame in its wake-up, exactly as stored; batches wake without frames", async () => {
    const r = ref();
    const got: (CarriedOutput | undefined)[] = [];
    const stop = b.bus.watch(r, (c) => got.push(c));
    await a.bus.appendInput(r, 1n, bytes("x"), {});
    await waitFor(async () => got.length > 0); // the subscription's confirmation (and the new generation)
    const e = (await a.bus.claim(r, 1)).epoch;
    const trace = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" };
    got.length = 0;
    const frame = new Uint8Array([0, 255, 1, 254, 0x4f]);
    await a.bus.appendOutput(r, 1, e, [frame], trace);
    await a.bus.appendOutput(r, 1, e, [bytes("with a snapshot")], trace, bytes("snap"));
    await a.bus.appendOutput(r, 1, e, [bytes("b1"), bytes("b2")], trace);
    await waitFor(async () => got.length >= 3);
    stop();
    const stored = (await a.bus.readOutput(r, 1, 0, 10)).entries;
    expect(got[0]).toEqual({ generation: 1, entries: [stored[0]] });
    expect(got[1]).toEqual({ generation: 1, entries: [stored[1]] });
    expect(got[2]).toBeUndefined();
    expect([...got[0]!.entries[0]!.frame]).toEqual([...frame]);
  });

  it("maps every key and the wake channel of a request to one cluster slot", () => {
    for (const r of [ref(), { tenantId: "t{1}", requestId: "r}:{x" }, { tenantId: "a:b", requestId: "}" }]) {
      const slots = new Set([1, 2, 7].flatMap((g) => allKeys(r, g)).map(calculateSlot));
      expect(slots.size).toBe(1);
      expect(calculateSlot(requestKeys(prefix, r).seq)).toBe(calculateSlot(requestKeys(prefix, r).tag.slice(1, -1)));
    }
  });

  it("escapes ids so braces and colons can neither break the tag nor make two requests collide", async () => {
    const x = { tenantId: "a:b", requestId: "c" };
    const y = { tenantId: "a", requestId: "b:c" };
    expect(requestKeys(prefix, x).tag).not.toBe(requestKeys(prefix, y).tag);
    const z = { tenantId: "t}", requestId: "{r" };
    expect(requestKeys(prefix, z).tag).toBe("{t%7D:%7Br}");
    await a.bus.appendInput(x, 1n, bytes("x"), {});
    await a.bus.appendInput(z, 1n, bytes("z"), {});
    expect(await a.bus.readInput(y, 1, 0)).toEqual([]);
    expect((await b.bus.readInput(z, 1, 0)).map((e) => new TextDecoder().decode(e.payload))).toEqual(["z"]);
    expect(() => requestKeys("bad{prefix", x)).toThrow(/braces/);
  });

  it("keeps payloads, frames, end details and snapshots byte-exact", async () => {
    const r = ref();
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    const invalidUtf8 = new Uint8Array([0xff, 0xfe, 0xc3, 0x28, 0x00, 0xed, 0xa0, 0x80]);
    await a.bus.appendInput(r, 2n, invalidUtf8, {});
    await a.bus.appendInput(r, 1n, all, {});
    expect((await b.bus.readInput(r, 1, 0)).map((e) => [...e.payload])).toEqual([[...all], [...invalidUtf8]]);
    const e = (await b.bus.claim(r, 1)).epoch;
    await b.bus.appendOutput(r, 1, e, [invalidUtf8, all, new Uint8Array(0)], {});
    await b.bus.saveSnapshot(r, 1, e, all);
    await b.bus.endOutput(r, 1, e, { ok: false, code: "unavailable", message: "", errorDetails: invalidUtf8 });
    const read = await a.bus.readOutput(r, 1, 0, 10);
    expect(read.entries.map((x) => [...x.frame])).toEqual([[...invalidUtf8], [...all], []]);
    expect(read.end).toEqual({ ok: false, code: "unavailable", message: "", errorDetails: invalidUtf8 });
    expect([...(await a.bus.loadSnapshot(r, 1))!]).toEqual([...all]);
  });

  it("stores seqnos of any int64 that bypasses ordering exactly", async () => {
    const r = ref();
    await a.bus.appendInput(r, -9223372036854775808n, bytes("min"), {});
    await a.bus.appendInput(r, 1n, bytes("one"), {});
    expect((await a.bus.readInput(r, 1, 0)).map((e) => e.seqno)).toEqual([-9223372036854775808n, 1n]);
    const far = await a.bus.appendInput(r, 9223372036854775807n, bytes("far"), {});
    expect(far).toMatchObject({ status: "beyond_window", nextSeqno: 2n });
  });

  it("wakes a watcher on another bus instance (another replica) for input, output and end", async () => {
    const r = ref();
    const wakes = { input: 0, output: 0 };
    const stopIn = b.bus.watchInput(r, () => wakes.input++);
    const stopOut = b.bus.watch(r, () => wakes.output++);
    // The subscription is confirmed with a wake-up of its own; count from there.
    await waitFor(() => wakes.input > 0 && wakes.output > 0);
    const base = { ...wakes };
    await a.bus.appendInput(r, 1n, bytes("x"), {});
    await waitFor(() => wakes.input > base.input);
    const e = (await a.bus.claim(r, 1)).epoch;
    const afterInput = wakes.output;
    await a.bus.appendOutput(r, 1, e, [bytes("f")], {});
    await waitFor(() => wakes.output > afterInput);
    const afterOutput = wakes.output;
    await a.bus.endOutput(r, 1, e, { ok: true });
    await waitFor(() => wakes.output > afterOutput);
    stopIn();
    stopOut();
  });

  it("subscribes once per request and unsubscribes when the last local listener leaves", async () => {
    const r = ref();
    const channel = requestKeys(prefix, r).channel;
    // Request channels are shard channels (SSUBSCRIBE), counted by SHARDNUMSUB.
    const numsub = async () => Number((await admin.pubsub("SHARDNUMSUB", channel))[1]);
    let second = 0;
    const stop1 = a.bus.watch(r, () => undefined);
    const stop2 = a.bus.watchInput(r, () => second++);
    await waitFor(async () => (await numsub()) === 1);
    stop1();
    const before = second;
    await b.bus.appendInput(r, 1n, bytes("x"), {});
    await waitFor(() => second > before);
    expect(await numsub()).toBe(1);
    stop2();
    await waitFor(async () => (await numsub()) === 0);
  });

  it("serves every start watch over one shared channel: no SUBSCRIBE per waiting request, all woken on reconnect", async () => {
    const probe = openBus(prefix, CONTRACT_OPTIONS);
    try {
      const refs = Array.from({ length: 300 }, () => ref());
      const woken = new Map<string, number>();
      const stops = refs.map((r) => probe.bus.watchStart(r, () => woken.set(r.requestId, (woken.get(r.requestId) ?? 0) + 1)));
      // The shared channel's confirmation wakes each waiting reader once (it reads again).
      await waitFor(() => woken.size === refs.length);
      // On a standalone server the starts channel is a shard channel like the request channels.
      const channels = await admin.pubsub("CHANNELS", `${prefix}:wake:*`);
      expect(channels).toEqual([]);
      const shardChannels = await admin.pubsub("SHARDCHANNELS", `${prefix}:wake:*`);
      expect(shardChannels).toContain(startsChannel(prefix));
      for (const r of refs.slice(0, 3)) expect(shardChannels).not.toContain(requestKeys(prefix, r).channel);
      expect(Number((await admin.pubsub("SHARDNUMSUB", startsChannel(prefix)))[1])).toBeGreaterThanOrEqual(1);
      // A generation started on another instance wakes its own watcher only.
      const before = new Map(woken);
      await b.bus.appendInput(refs[7]!, 1n, bytes("x"), {});
      await waitFor(() => woken.get(refs[7]!.requestId)! > before.get(refs[7]!.requestId)!);
      expect(woken.get(refs[8]!.requestId)).toBe(before.get(refs[8]!.requestId));
      // Messages published while the subscriber was away are lost: it wakes every watcher on reconnect.
      const seen = new Map(woken);
      const subName = `${probe.name}:sub`;
      const line = String(await admin.call("CLIENT", "LIST")).split("\n").find((l) => l.includes(` name=${subName} `));
      const id = /\bid=(\d+)/.exec(line ?? "")?.[1];
      expect(id).toBeDefined();
      await admin.call("CLIENT", "KILL", "ID", id!);
      await waitFor(() => refs.every((r) => woken.get(r.requestId)! > seen.get(r.requestId)!), 10_000);
      for (const stop of stops) stop();
    } finally {
      await probe.bus.close();
    }
  });

  it("keeps two connections per bus instance while 500 requests are watched", async () => {
    const listed = async (name: string): Promise<string[]> =>
      String(await admin.call("CLIENT", "LIST"))
        .split("\n")
        .filter((line) => line.includes(` name=${name}:`));
    const probe = openBus(prefix, CONTRACT_OPTIONS);
    try {
      const refs = Array.from({ length: 500 }, () => ref());
      let woken = 0;
      const stops = refs.flatMap((r) => [probe.bus.watch(r, () => woken++), probe.bus.watchInput(r, () => undefined)]);
      // Every channel is subscribed (each confirmation wakes its output watcher once).
      await waitFor(() => woken >= 500);
      const channels = await admin.pubsub("SHARDCHANNELS", `${prefix}:wake:*`);
      expect(channels.length).toBeGreaterThanOrEqual(500);
      const lines = await listed(probe.name);
      expect(lines).toHaveLength(2);
      expect(lines.some((l) => l.includes(`name=${probe.name}:cmd `))).toBe(true);
      expect(lines.some((l) => l.includes(`name=${probe.name}:sub `))).toBe(true);
      // Live reads on all of them still go through the same two connections.
      await Promise.all(refs.slice(0, 100).map((r) => probe.bus.readOutput(r, 1, 0, 10)));
      expect(await listed(probe.name)).toHaveLength(2);
      for (const stop of stops) stop();
    } finally {
      await probe.bus.close();
    }
    await waitFor(async () => (await listed(probe.name)).length === 0);
  });

  it("shares reader presence across instances and lets a dead replica's readers expire", async () => {
    const r = ref();
    const replica = openBus(prefix, CONTRACT_OPTIONS);
    const leaveA = await a.bus.addReader(r, "on-a", 10_000);
    await replica.bus.addReader(r, "on-dead-replica", 300);
    expect(await b.bus.readerPresence(r)).toMatchObject({ readers: 2 });
    // The replica dies without removing its reader: no refresh, the member expires.
    await replica.bus.close();
    await waitFor(async () => (await b.bus.readerPresence(r)).readers === 1);
    await leaveA();
    const p = await b.bus.readerPresence(r);
    expect(p.readers).toBe(0);
    expect(p.lastLeftAt).toBeGreaterThan(0);
  });

  it("counts a vanished replica's last reader as left at its expiry", async () => {
    const r = ref();
    const replica = openBus(prefix, CONTRACT_OPTIONS);
    await replica.bus.addReader(r, "only", 300);
    await replica.bus.close();
    const p = await waitFor(async () => {
      const x = await a.bus.readerPresence(r);
      return x.readers === 0 ? x : undefined;
    });
    expect(p.lastLeftAt).toBeGreaterThan(0);
  });

  it("refreshes a present reader before its TTL passes", async () => {
    const r = ref();
    const readers = requestKeys(prefix, r).readers;
    const leave = await a.bus.addReader(r, "live", 300);
    const first = Number(await admin.zscore(readers, "live"));
    // Wait until Redis time is past the first expiry: only refreshes keep the reader present.
    await waitFor(async () => {
      const [sec, usec] = await admin.time();
      return Number(sec) * 1000 + Math.floor(Number(usec) / 1000) > first + 50;
    });
    expect((await b.bus.readerPresence(r)).readers).toBe(1);
    await leave();
    expect((await b.bus.readerPresence(r)).readers).toBe(0);
  });

  it("puts a TTL on every key of an ended generation and on the sequence state", async () => {
    const long = openBus(prefix, { ...CONTRACT_OPTIONS, finishedRetentionMs: 60_000, sequenceStateTtlMs: 120_000 });
    try {
      const r = ref();
      await long.bus.appendInput(r, 1n, bytes("a"), {});
      await long.bus.appendInput(r, 3n, bytes("buffered forever"), {});
      const e = (await long.bus.claim(r, 1)).epoch;
      await long.bus.appendOutput(r, 1, e, [bytes("f")], {});
      await long.bus.saveSnapshot(r, 1, e, bytes("s"));
      const k = requestKeys(prefix, r);
      const g = k.generation(1);
      expect(await admin.pttl(k.seq)).toBe(-1);
      expect(await admin.pttl(g.output)).toBe(-1);
      await long.bus.endOutput(r, 1, e, { ok: true });
      for (const key of [g.input, g.buffered, g.output, g.end, g.epoch, g.snapshot]) {
        const ttl = await admin.pttl(key);
        expect(ttl, key).toBeGreaterThan(0);
        expect(ttl, key).toBeLessThanOrEqual(60_000);
      }
      expect(await admin.pttl(k.seq)).toBeGreaterThan(60_000);
      // A late append into the ended generation does not create an immortal key.
      expect(await long.bus.appendInput(r, 2n, bytes("late"), {})).toMatchObject({ generation: 1 });
      const keys: string[] = [];
      let cursor = "0";
      do {
        const [next, found] = await admin.scan(cursor, "MATCH", `${k.base}:*`, "COUNT", 100);
        cursor = next;
        keys.push(...found);
      } while (cursor !== "0");
      for (const key of keys) expect(await admin.pttl(key), key).toBeGreaterThan(0);
    } finally {
      await long.bus.close();
    }
  });

  // What each operation of a turn costs in Redis, script calls included (issue 14: ≤ 2 commands
  // per delivered frame). Counts only the commands that name this request's keys or channel.
  it("costs the fewest Redis commands per operation: sizes kept in the seq hash, no end lookups while live", async () => {
    const r = ref();
    const cost = async <T>(fn: () => Promise<T>): Promise<number> => {
      const m = await monitorCommands(REDIS_URL);
      await fn();
      return commandCount(await m.stop(), r.requestId);
    };
    const k = requestKeys(prefix, r);
    const g = k.generation(1);
    // New generation: EVALSHA, HMGET, HSET, PERSIST, XADD, HSET, SPUBLISH i, SPUBLISH o, SPUBLISH of the tag on the starts channel.
    expect(await cost(() => a.bus.appendInput(r, 1n, bytes("1"), {}))).toBe(9);
    // In order: EVALSHA, HMGET, XADD, HLEN (the flush's check), HSET, SPUBLISH (no XLEN).
    expect(await cost(() => a.bus.appendInput(r, 2n, bytes("2"), {}))).toBe(6);
    // Duplicate: EVALSHA, HMGET.
    expect(await cost(() => a.bus.appendInput(r, 2n, bytes("again"), {}))).toBe(2);
    // Ahead of a gap: EVALSHA, HMGET, HSET buf, HSET seq; then the gap's append flushes it.
    expect(await cost(() => a.bus.appendInput(r, 4n, bytes("4"), {}))).toBe(4);
    expect(await cost(() => a.bus.appendInput(r, 4n, bytes("dup of a buffered one"), {}))).toBe(3); // + HEXISTS
    expect(await cost(() => a.bus.appendInput(r, 3n, bytes("3"), {}))).toBe(10); // XADD 3, HLEN, then HGET, HGET, HDEL, XADD of 4
    expect(await admin.hmget(k.seq, "next", "inputs", "buffered")).toEqual(["5", "4", "0"]);
    expect((await a.bus.readInput(r, 1, 0)).map((e) => new TextDecoder().decode(e.payload))).toEqual(["1", "2", "3", "4"]);
    // Claim of a live generation (with its snapshot): EVALSHA, HMGET, INCR, XLEN, XADD (the empty stream's last id), GET.
    let e = 0;
    expect(await cost(async () => (e = (await a.bus.claim(r, 1)).epoch))).toBe(6);
    // Live snapshot: EVALSHA, HMGET, GET, SET.
    expect(await cost(() => a.bus.saveSnapshot(r, 1, e, bytes("s1")))).toBe(4);
    // First reader: EVALSHA, TIME, ZADD, PEXPIRE NX; the next one also PEXPIRE GT.
    const leave: Array<() => Promise<void>> = [];
    expect(await cost(async () => leave.push(await a.bus.addReader(r, "r1", 10_000)))).toBe(4);
    expect(await cost(async () => leave.push(await a.bus.addReader(r, "r2", 20_000)))).toBe(5);
    expect(await admin.pttl(k.readers)).toBeGreaterThan(10_000);
    // Presence while readers are live: EVALSHA, TIME, ZCOUNT (lastLeftAt is not read).
    expect(await cost(() => a.bus.readerPresence(r))).toBe(3);
    for (const l of leave) await l(); // no reader refresh below
    // End: EVALSHA, HMGET, GET, HSET, HSET, XLEN, XADD, XSETID, 7 PEXPIRE, PUBLISH.
    expect(await cost(() => a.bus.endOutput(r, 1, e, { ok: true }))).toBe(16);
    expect(await a.bus.endOutput(r, 1, e, { ok: true })).toEqual({ ok: false, reason: "ended" });
    // After the end the snapshot takes the end entry's TTL: + PTTL.
    expect(await cost(() => a.bus.saveSnapshot(r, 1, e, bytes("s2")))).toBe(5);
    expect(await admin.pttl(g.snapshot)).toBeGreaterThan(0);
  });

  it("appends input at the stream's true end and flushes the buffer when the seq hash lacks the sizes or holds stale ones (an older build appended)", async () => {
    const r = ref();
    const k = requestKeys(prefix, r);
    const g = k.generation(1);
    await a.bus.appendInput(r, 1n, bytes("1"), {});
    await a.bus.appendInput(r, 3n, bytes("3"), {});
    // As written by the build before the sizes were kept.
    await admin.hdel(k.seq, "inputs", "buffered");
    expect(await a.bus.appendInput(r, 2n, bytes("2"), {})).toMatchObject({ status: "accepted" });
    expect(await admin.hmget(k.seq, "next", "inputs", "buffered")).toEqual(["4", "3", "0"]);
    // An older build appended without updating the size: Redis refuses the id, the script resyncs.
    await admin.xadd(g.input, "0-4", "s", "4", "p", "4", "t", "{}");
    await admin.hset(k.seq, "next", "5");
    expect(await a.bus.appendInput(r, 5n, bytes("5"), {})).toMatchObject({ status: "accepted" });
    expect((await a.bus.readInput(r, 1, 0)).map((x) => new TextDecoder().decode(x.payload))).toEqual(["1", "2", "3", "4", "5"]);
    expect(await admin.hget(k.seq, "inputs")).toBe("5");
    // An older build buffered 7 ahead of the gap without counting it: delivering 6 flushes it.
    await admin.hset(g.buffered, "p:7", "7", "t:7", "{}");
    expect(await a.bus.appendInput(r, 6n, bytes("6"), {})).toMatchObject({ status: "accepted" });
    expect((await a.bus.readInput(r, 1, 5)).map((x) => new TextDecoder().decode(x.payload))).toEqual(["6", "7"]);
    expect(await admin.hmget(k.seq, "next", "inputs", "buffered")).toEqual(["8", "7", "0"]);
  });

  it("refuses claims of generations that do not exist", async () => {
    const r = ref();
    await expect(a.bus.claim(r, 1)).rejects.toThrow(/does not exist/);
    await a.bus.appendInput(r, 1n, bytes("x"), {});
    await expect(a.bus.claim(r, 2)).rejects.toThrow(/does not exist/);
    expect(await a.bus.appendOutput(r, 2, 0, [bytes("x")], {})).toEqual({ ok: false, reason: "fenced" });
  });
});
