// The Redis bus on a real 3-node Redis Cluster: the whole bus contract, and the wake-ups as shard
// channels (SPUBLISH / SSUBSCRIBE): a request's wake-ups reach only the master that owns its
// slot, and a master's subscriber connection that drops is replaced and its watchers woken.
import { randomUUID } from "node:crypto";
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveRedisServerBinary, startRedisCluster, waitFor, type PrivateRedisCluster } from "@byok/testing";
import { createRedisBus, requestKeys, type Bus, type BusOptions, type RequestRef } from "../src/index.js";
import { busContract, CONTRACT_OPTIONS } from "./contract.js";

const haveRedisServer = await haveRedisServerBinary();
const bytes = (s: string) => new TextEncoder().encode(s);

describe.runIf(haveRedisServer)("Redis bus on a Redis Cluster (3 local nodes)", () => {
  let cluster: PrivateRedisCluster | undefined;
  let starting: Promise<PrivateRedisCluster> | undefined;
  /** Started by the first suite that needs it (the contract's beforeAll runs before this file's). */
  const theCluster = () => (starting ??= startRedisCluster(3).then((c) => (cluster = c)));
  const target = (c: PrivateRedisCluster) => ({ cluster: c.ports.map((port) => ({ host: "127.0.0.1", port })) });
  const buses: Bus[] = [];
  const open = async (prefix: string, opts: BusOptions = CONTRACT_OPTIONS, name = `bus-cluster-${randomUUID().slice(0, 8)}`) => {
    const bus = createRedisBus({ redis: target(await theCluster()), keyPrefix: prefix, options: opts, name });
    buses.push(bus);
    return { bus, name };
  };

  afterAll(async () => {
    for (const bus of buses) await bus.close().catch(() => undefined);
    await cluster?.close();
  }, 30_000);

  // Nothing to clean: the cluster is this file's own and is killed at the end.
  busContract("redis cluster", async (opts) => ({ bus: (await open(`bus-contract-${randomUUID().slice(0, 8)}`, opts)).bus, cleanup: async () => undefined }));

  describe("wake-ups as shard channels", () => {
    let admin: Cluster;
    const prefix = `bus-shard-${randomUUID().slice(0, 8)}`;
    const ref = (): RequestRef => ({ tenantId: "t-shard", requestId: randomUUID() });
    /** The master that owns a channel's slot, and the others. */
    const nodesOf = async (channel: string) => {
      const slot = Number(await admin.cluster("KEYSLOT", channel));
      const owners: Redis[] = [];
      const others: Redis[] = [];
      // CLUSTER SLOTS names the owner of each range by port.
      const slots = await admin.cluster("SLOTS");
      const ownerPort = slots.find(([from, to]) => slot >= from && slot <= to)![2]![1];
      for (const node of admin.nodes("master")) (Number(node.options.port) === ownerPort ? owners : others).push(node);
      return { owner: owners[0]!, others };
    };

    beforeAll(async () => {
      admin = new Cluster(target(await theCluster()).cluster);
      await admin.ping();
    }, 60_000);
    afterAll(() => admin?.disconnect());

    it("a request's wake-ups go to the master that owns its slot only, not to every node", async () => {
      const { bus } = await open(prefix);
      const r = ref();
      const channel = requestKeys(prefix, r).channel;
      const { owner, others } = await nodesOf(channel);
      // A classic subscriber to the same channel name on every other master: a classic PUBLISH
      // is broadcast over the cluster bus and would reach it; a shard message does not.
      const eavesdroppers = others.map((n) => new Redis({ port: Number(n.options.port) }));
      const overheard: string[] = [];
      for (const e of eavesdroppers) {
        e.on("message", (_c: string, m: string) => overheard.push(m));
        await e.subscribe(channel);
      }
      let inputWakes = 0;
      const stop = bus.watchInput(r, () => inputWakes++);
      try {
        await waitFor(async () => Number(((await owner.pubsub("SHARDNUMSUB", channel)) as [string, number])[1]) === 1);
        for (const n of others) expect(((await n.pubsub("SHARDNUMSUB", channel)) as [string, number])[1]).toBe(0);
        const before = inputWakes;
        expect((await bus.appendInput(r, 1n, bytes("x"), {})).status).toBe("accepted");
        await waitFor(() => inputWakes > before);
        // The publish of a classic channel would have arrived long before this one round trip.
        await admin.ping();
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(overheard).toEqual([]);
      } finally {
        stop();
        for (const e of eavesdroppers) e.disconnect();
      }
    });

    it("a master's subscriber connection that drops is replaced: its watchers are woken and later wake-ups arrive", async () => {
      const { bus, name } = await open(prefix);
      // Requests spread over the three masters.
      const refs = Array.from({ length: 12 }, () => ref());
      const woken = new Map<string, number>();
      const stops = refs.map((r) => bus.watch(r, () => woken.set(r.requestId, (woken.get(r.requestId) ?? 0) + 1)));
      try {
        await waitFor(() => refs.every((r) => (woken.get(r.requestId) ?? 0) >= 1));
        // One shard subscriber connection per master that owns some of the watched channels,
        // whatever the number of channels there (docs/distributed.md).
        const owners = new Set<string>();
        for (const r of refs) owners.add(String((await nodesOf(requestKeys(prefix, r).channel)).owner.options.port));
        for (const node of admin.nodes("master")) {
          const subscribers = String(await node.call("CLIENT", "LIST"))
            .split("\n")
            .filter((l) => l.includes(`(ssubscriber):${name}:sub`) && /\bflags=\S*P/.test(l)).length;
          expect(subscribers, `shard subscribers of the bus on master ${node.options.port}`).toBe(owners.has(String(node.options.port)) ? 1 : 0);
        }
        const victim = refs[0]!;
        const { owner } = await nodesOf(requestKeys(prefix, victim).channel);
        // ioredis names a shard subscriber "ioredis-cluster(ssubscriber):<our connection name>".
        const line = String(await owner.call("CLIENT", "LIST"))
          .split("\n")
          .find((l) => l.includes(`(ssubscriber):${name}:sub`) && /\bflags=\S*P/.test(l));
        const id = /\bid=(\d+)/.exec(line ?? "")?.[1];
        expect(id, "the shard subscriber's connection on the owning master").toBeDefined();
        const onOwner: RequestRef[] = [];
        for (const r of refs) if (Number(((await owner.pubsub("SHARDNUMSUB", requestKeys(prefix, r).channel)) as [string, number])[1]) === 1) onOwner.push(r);
        expect(onOwner.length).toBeGreaterThan(0);
        const seen = new Map(woken);
        await owner.call("CLIENT", "KILL", "ID", id!);
        // Messages published while it was away are lost: every watcher of that master looks again.
        await waitFor(() => onOwner.every((r) => woken.get(r.requestId)! > seen.get(r.requestId)!), 15_000);
        // And it hears new wake-ups on the new connection.
        await waitFor(async () => Number(((await owner.pubsub("SHARDNUMSUB", requestKeys(prefix, victim).channel)) as [string, number])[1]) === 1);
        const now = woken.get(victim.requestId)!;
        expect((await bus.appendInput(victim, 1n, bytes("start"), {})).status).toBe("accepted");
        await waitFor(() => woken.get(victim.requestId)! > now);
      } finally {
        for (const stop of stops) stop();
      }
    });
  });
});
