// Ingress faults and properties with real processes: appends spread over both replicas
// (shuffled, duplicated) reach the worker once each in order (the trace across ingress and
// worker processes is tested in observability.test.ts); Redis connections of a replica stay flat under 500 open RunSSE streams;
// kill -9 of the ingress serving a RunSSE, the client reconnecting to the other replica.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestKeys } from "@byok/bus";
import { createCursorClient, heartbeatMessage, holdIdleRunSse, metricSum, runRequestMessage, scrapeMetrics } from "@byok/testing";
import type { AgentServerMessage } from "@byok/wire";
import { decodeFrames, describeFrame, encodeFrames, isText, xrangeFrames } from "./frames.js";
import { startTestCluster, TEST_MODEL, waitFor, type TestCluster } from "./process-harness.js";

describe("ingress faults (real processes)", () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await startTestCluster({ ingress: 2, workers: 1 });
  });
  afterAll(async () => {
    await c?.close();
  });

  it("appends sent alternately to both replicas, shuffled and duplicated, reach the worker once each, in order", async () => {
    c.sim.enqueue({ text: Array.from({ length: 20 }, (_, i) => `w${i} `), chunkDelayMs: 50 });
    const requestId = `spread-${randomUUID()}`;
    const ref = { tenantId: "default", requestId };
    const clients = c.ingress.map((p) => createCursorClient({ baseUrl: p.url, authToken: c.authToken }));
    const sse = clients[1]!.collect(requestId);
    const n = 12;
    const sends: { seqno: number; i: number }[] = [];
    for (let s = 1; s <= n; s++) sends.push({ seqno: s, i: s % 2 }, { seqno: s, i: (s + 1) % 2 }); // each seqno to both replicas
    for (let k = sends.length - 1; k > 0; k--) {
      const j = Math.floor(Math.random() * (k + 1));
      [sends[k], sends[j]] = [sends[j]!, sends[k]!];
    }
    const results = await Promise.all(
      sends.map(({ seqno, i }) =>
        clients[i]!.append(
          requestId,
          seqno,
          seqno === 1 ? runRequestMessage({ text: "hi", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }) : heartbeatMessage(),
        ),
      ),
    );
    expect(results.every((r) => r.ok)).toBe(true);
    const out = await sse;
    expect(out.end).toEqual({ ok: true });
    const input = await c.redis.xrange(requestKeys(c.keyPrefix, ref).generation(1).input, "-", "+");
    const seqnos = input.map(([, f]) => Number(f[f.indexOf("s") + 1]));
    expect(seqnos).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  });

  it("keeps the Redis connections of an ingress replica flat while 500 RunSSE streams are open", async () => {
    // Idle streams: RunSSE for requests that do not exist yet wait the (raised) not-found window.
    // Named by GATEWAY_NAME: its Redis client names carry the name.
    const name = `byok-ingress-t${randomUUID().slice(0, 8)}`;
    const replica = await c.spawn("ingress", { GATEWAY_NOT_FOUND_WAIT_MS: "120000", GATEWAY_HEARTBEAT_MS: "60000", GATEWAY_NAME: name });
    expect(replica.name).toBe(name);
    const countConns = async () => {
      const list = await c.redis.client("LIST");
      return String(list).split("\n").filter((l) => l.includes(` name=${replica.name}:`)).length;
    };
    const before = await waitFor(async () => ((await countConns()) >= 3 ? await countConns() : undefined), 10_000, "replica connections");
    // The streams are not awaited one by one: they are open once the replica counts them.
    // Held over node:http (a fetch body could be garbage-collected and cancelled under the test).
    const held = Array.from({ length: 500 }, (_, i) => holdIdleRunSse(replica.url, `idle-${i}-${randomUUID()}`, { authToken: c.authToken }));
    // Generous: each stream is authenticated on a machine shared with other suites.
    await waitFor(async () => (metricSum(await scrapeMetrics(replica.url), "byok_run_sse_open") >= 500 ? true : undefined), 120_000, "500 RunSSE streams open");
    // Waiting for their runs, they share the bus's one starts channel: no channel per request.
    // (Every wake channel is a shard channel on a standalone server: libs/bus/README.md.)
    const shardChans = (await c.redis.call("PUBSUB", "SHARDCHANNELS", `${c.keyPrefix}:wake:*`)) as string[];
    expect(shardChans).toContain(`${c.keyPrefix}:wake:starts`);
    expect(shardChans.filter((ch) => ch.includes("idle-"))).toEqual([]);
    expect(await c.redis.call("PUBSUB", "CHANNELS", `${c.keyPrefix}:wake:*`)).toEqual([]);
    expect(await countConns()).toBe(before);
    expect(before).toBe(3); // bus command + bus subscriber + queue producer
    for (const r of held) r.destroy();
    replica.signal("SIGKILL");
    await replica.exited;
  }, 180_000);

  it("kill -9 of the ingress serving a RunSSE: the client reconnects to the other replica and gets every frame", async () => {
    c.sim.enqueue({ text: Array.from({ length: 30 }, (_, i) => `k${i} `), chunkDelayMs: 80 });
    const requestId = `ingkill-${randomUUID()}`;
    const ref = { tenantId: "default", requestId };
    const [first, second] = c.ingress;
    const a = createCursorClient({ baseUrl: first!.url, authToken: c.authToken });
    const b = createCursorClient({ baseUrl: second!.url, authToken: c.authToken });
    const res = await a.runSse(requestId);
    expect((await a.append(requestId, 1, runRequestMessage({ text: "go", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }))).ok).toBe(true);
    const before: AgentServerMessage[] = [];
    let failed = false;
    try {
      for await (const item of res.frames) {
        if (item.kind !== "message") continue;
        const m = item.message;
        if (m.message.case === "interactionUpdate" && m.message.value.message.case === "heartbeat") continue;
        before.push(m);
        if (before.filter(isText).length === 3) {
          first!.signal("SIGKILL");
          await first!.exited;
        }
      }
    } catch {
      failed = true; // the connection died with the process
    }
    expect(failed || before.length > 0).toBe(true);
    // Resume on the other replica while the run is still live: only what is missing, then live.
    const resumed = await b.collect(requestId, { resumeAfter: before.length });
    expect(resumed.end).toEqual({ ok: true });
    // A full replay on the other replica: every frame, from the start.
    const replay = await b.collect(requestId);
    const stored = decodeFrames(await xrangeFrames(c.redis, c.keyPrefix, ref, 1));
    expect(encodeFrames(replay.messages)).toEqual(encodeFrames(stored));
    expect(encodeFrames([...before, ...resumed.messages])).toEqual(encodeFrames(stored));
    expect(replay.messages.map(describeFrame).at(-1)).toBe("turnEnded");
  });
});
