// Redis restarted mid-run, on a private redis-server without persistence (never the shared
// one): the in-flight turn ends with a clear `unavailable`, BidiAppend during the outage answers
// `unavailable`, no process crashes, and the next turn works once Redis is back.
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorClient, runRequestMessage } from "@byok/testing";
import { isText } from "./frames.js";
import { startTestCluster, TEST_MODEL, waitFor, type TestCluster } from "./process-harness.js";
import { freePort, haveRedisServer, killRedisServer, startRedisServer } from "./redis-servers.js";

describe.runIf(haveRedisServer)("Redis restart mid-run (real processes, private redis-server)", () => {
  let c: TestCluster;
  let port: number;
  let redis: ChildProcess;
  beforeAll(async () => {
    port = await freePort();
    redis = await startRedisServer(port);
    c = await startTestCluster({ ingress: 1, workers: 1, redisUrl: `redis://127.0.0.1:${port}` });
  });
  afterAll(async () => {
    await c?.close();
    if (redis) await killRedisServer(redis);
  });

  it("ends the in-flight turn unavailable, refuses appends while down, and serves the next turn after", async () => {
    const [ingress] = c.ingress;
    const [worker] = c.workers;
    const client = createCursorClient({ baseUrl: ingress!.url, authToken: c.authToken });
    c.sim.enqueue({ text: Array.from({ length: 40 }, (_, i) => `r${i} `), chunkDelayMs: 100 });
    const requestId = `outage-${randomUUID()}`;
    let killed = false;
    const turn = await client.runTurn({
      requestId,
      message: runRequestMessage({ text: "go", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }),
      onMessage: async (m) => {
        if (killed || !isText(m)) return;
        killed = true;
        await killRedisServer(redis);
      },
    });
    expect(killed).toBe(true);
    expect(turn.end).toMatchObject({ ok: false, code: "unavailable" });
    expect(turn.end && !turn.end.ok ? turn.end.message : "").toMatch(/message bus is unavailable/);

    // During the outage: BidiAppend answers unavailable (a hang would run into the test's timeout).
    const during = await client.append(`during-${randomUUID()}`, 1, runRequestMessage({ text: "x", conversationId: "c", modelId: TEST_MODEL }));
    expect(during).toMatchObject({ ok: false, code: "unavailable" });

    // Redis comes back empty (no persistence).
    redis = await startRedisServer(port);
    await waitFor(async () => (await fetch(`${ingress!.url}/readyz`)).status === 200, 20_000, "ingress ready again");
    await waitFor(async () => (await fetch(`${worker!.url}/readyz`)).status === 200, 20_000, "worker ready again");

    c.sim.enqueue({ text: ["back ", "again"] });
    const next = `after-${randomUUID()}`;
    const ok = await waitFor(async () => {
      const r = await client.runTurn({ requestId: `${next}-${randomUUID().slice(0, 4)}`, message: runRequestMessage({ text: "hi", conversationId: `conv-${next}`, modelId: TEST_MODEL }) });
      return r.end?.ok ? r : undefined;
    }, 30_000, "a turn after Redis is back");
    expect(ok.textDeltas).toContain("back again");
    // Nothing crashed.
    expect(ingress!.exitCode()).toBeUndefined();
    expect(worker!.exitCode()).toBeUndefined();
  });
});
