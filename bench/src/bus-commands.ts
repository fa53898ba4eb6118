// `npm run bench:bus-commands`: Redis commands of the output path per frame, counted on a
// private redis-server (INFO commandstats, script-internal calls included) — a count, so the
// machine's load does not move it. One paced turn as the engine and a RunSSE reader drive it:
// every frame is one append (the run snapshot due every BENCH_SNAPSHOT_EVERY-th frame, as the
// 250 ms snapshot interval does for deltas 50 ms apart), and the reader, after each wake-up,
// takes the frame the wake-up carried or reads (as RunSSE does). Not a test.
//   BENCH_FRAMES (600)  BENCH_SNAPSHOT_EVERY (5)  BENCH_SNAPSHOT_SEPARATE=1 (saveSnapshot after
//   the append, as the engine did before the snapshot rode in the append: the A side of an A/B)
//   BENCH_CLUSTER=1 (a private 3-master Redis Cluster instead of one redis-server: commands are
//   summed over the masters, and the cluster-bus messages that pub/sub costs are counted from
//   CLUSTER INFO — a classic PUBLISH is forwarded to every other node, a shard message is not)
import { createRedisBus, type Bus, type CarriedOutput } from "@byok/bus";
import { startRedisCluster } from "@byok/testing";
import { Redis } from "ioredis";
import { callDelta, redisCommandCalls } from "./scenarios.js";
import { startRedis } from "./services.js";
import { round } from "./stats.js";

const FRAMES = Number(process.env.BENCH_FRAMES ?? 600);
const SNAPSHOT_EVERY = Number(process.env.BENCH_SNAPSHOT_EVERY ?? 5);
const SEPARATE = process.env.BENCH_SNAPSHOT_SEPARATE === "1";
const CLUSTER = process.env.BENCH_CLUSTER === "1";

const server = CLUSTER ? await startRedisCluster(3) : await startRedis();
const ports = "ports" in server ? server.ports : [server.port];
const admins = ports.map((port) => new Redis({ port }));
const options = { seqnoWindow: 64, maxOutputFrames: 50_000, maxInputEntries: 10_000, finishedRetentionMs: 60_000, sequenceStateTtlMs: 60_000 };
const target = "ports" in server ? { cluster: ports.map((port) => ({ host: "127.0.0.1", port })) } : server.url;
const bus: Bus = createRedisBus({ redis: target, keyPrefix: "benchcmd", options });

/** Commands summed over every node (a cluster's node counts only what it served). */
const commandCalls = async () => {
  const sum = new Map<string, number>();
  for (const a of admins) for (const [k, v] of await redisCommandCalls(a)) sum.set(k, (sum.get(k) ?? 0) + v);
  return sum;
};
/** Pub/sub messages sent over the cluster bus, summed over the nodes (0 on a standalone server). */
const clusterBusPublishes = async () => {
  let publish = 0;
  let publishShard = 0;
  if (!CLUSTER) return { publish, publishShard };
  for (const a of admins) {
    const info = String(await a.cluster("INFO"));
    publish += Number(/cluster_stats_messages_publish_sent:(\d+)/.exec(info)?.[1] ?? 0);
    publishShard += Number(/cluster_stats_messages_publishshard_sent:(\d+)/.exec(info)?.[1] ?? 0);
  }
  return { publish, publishShard };
};
try {
  const ref = { tenantId: "t", requestId: "r" };
  await bus.appendInput(ref, 1n, new Uint8Array([1]), {});
  const epoch = (await bus.claim(ref, 1)).epoch;
  const frame = new Uint8Array(40).fill(7);
  const snapshot = new Uint8Array(600).fill(8);
  // The reader's wake-ups: what each carried (undefined: a plain one).
  const wakes: (CarriedOutput | undefined)[] = [];
  let woken: (() => void) | undefined;
  const stop = bus.watch(ref, (carried) => {
    wakes.push(carried);
    woken?.();
  });
  const nextWake = () => (wakes.length > 0 ? Promise.resolve() : new Promise<void>((r) => (woken = r)));
  await nextWake(); // the subscription's confirmation
  wakes.length = 0;
  let read = 0;
  let carriedFrames = 0;
  const before = await commandCalls();
  const busBefore = await clusterBusPublishes();
  for (let i = 0; i < FRAMES; i++) {
    const withSnapshot = i % SNAPSHOT_EVERY === SNAPSHOT_EVERY - 1;
    const r = await bus.appendOutput(ref, 1, epoch, [frame], {}, withSnapshot && !SEPARATE ? snapshot : undefined);
    if (!r.ok) throw new Error(`append refused: ${r.reason}`);
    if (withSnapshot && SEPARATE && !(await bus.saveSnapshot(ref, 1, epoch, snapshot))) throw new Error("snapshot refused");
    await nextWake();
    const got = wakes.splice(0);
    const entries = got.every((c) => c !== undefined) ? got.flatMap((c) => c!.entries).filter((e) => e.index >= read) : undefined;
    if (entries && entries.length > 0 && entries.every((e, k) => e.index === read + k)) {
      read += entries.length;
      carriedFrames += entries.length;
    } else read += (await bus.readOutput(ref, 1, read, 256)).entries.length;
  }
  stop();
  await bus.endOutput(ref, 1, epoch, { ok: true });
  const last = await bus.readOutput(ref, 1, read, 256);
  if (!last.end || read !== FRAMES) throw new Error("the reader did not get every frame and the end");
  const d = callDelta(before, await commandCalls());
  const busAfter = await clusterBusPublishes();
  console.log(
    JSON.stringify(
      {
        redis: CLUSTER ? "3-master cluster" : "standalone",
        frames: FRAMES,
        snapshotEvery: SNAPSHOT_EVERY,
        snapshot: SEPARATE ? "separate saveSnapshot" : "carried by the append",
        commandsPerFrame: round(d.total / FRAMES, 3),
        framesTakenFromWakeUps: carriedFrames,
        byCommandPerFrame: Object.fromEntries(Object.entries(d.byCommand).map(([k, v]) => [k, round(v / FRAMES, 3)])),
        ...(CLUSTER && {
          clusterBusMessagesPerFrame: {
            publish: round((busAfter.publish - busBefore.publish) / FRAMES, 3),
            publishShard: round((busAfter.publishShard - busBefore.publishShard) / FRAMES, 3),
          },
        }),
      },
      null,
      2,
    ),
  );
} finally {
  await bus.close();
  for (const a of admins) a.disconnect();
  await ("ports" in server ? server.close() : server.stop());
}
process.exit(0);
