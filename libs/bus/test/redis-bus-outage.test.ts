// Redis outage on a PRIVATE redis-server (no persistence, free port; never the shared one):
// operations fail fast with BusUnavailableError, nothing crashes, and the bus recovers
// (commands and wake-up subscriptions) once Redis is back.
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, haveRedisServerBinary, killRedisServer, startRedisServer } from "@byok/testing";
import { BusUnavailableError, createRedisBus, type Bus } from "../src/index.js";
import { CONTRACT_OPTIONS } from "./contract.js";
import { REDIS_URL, deleteKeys, uniquePrefix, waitFor } from "./redis-harness.js";

const haveRedisServer = await haveRedisServerBinary();

describe.runIf(haveRedisServer)("Redis bus: outage and recovery", () => {
  let server: ChildProcess | undefined;
  let bus: Bus | undefined;
  afterAll(async () => {
    await bus?.close();
    if (server) await killRedisServer(server);
  });

  it("fails fast while Redis is down and recovers commands and subscriptions afterwards", async () => {
    const port = await freePort();
    server = await startRedisServer(port);
    const errors: Error[] = [];
    bus = createRedisBus({
      redis: `redis://127.0.0.1:${port}`,
      keyPrefix: "outage",
      options: CONTRACT_OPTIONS,
      name: "bus-outage-test",
      onError: (e) => errors.push(e),
    });
    const r = { tenantId: "default", requestId: "outage-1" };
    let inputWakes = 0;
    const stopWatch = bus.watchInput(r, () => inputWakes++);
    expect(await bus.appendInput(r, 1n, new Uint8Array([1]), {})).toMatchObject({ status: "accepted", generation: 1 });
    await waitFor(() => inputWakes > 0);

    await killRedisServer(server);
    // Whether the loss is already noticed or not, the call rejects as "unavailable".
    await expect(bus.appendInput(r, 2n, new Uint8Array([2]), {})).rejects.toBeInstanceOf(BusUnavailableError);
    for (const call of [
      () => bus!.readOutput(r, 1, 0, 10),
      () => bus!.latestGeneration(r),
      () => bus!.appendOutput(r, 1, 1, [new Uint8Array([3])], {}),
    ]) {
      await expect(call()).rejects.toBeInstanceOf(BusUnavailableError);
    }
    // Reconnect attempts fail (ECONNREFUSED): reported to onError, never thrown.
    await waitFor(() => errors.length > 0);

    server = await startRedisServer(port);
    // The new server is empty (no persistence): the request starts over as generation 1.
    const outcome = await waitFor(async () => {
      try {
        return await bus!.appendInput(r, 1n, new Uint8Array([9]), {});
      } catch (err) {
        if (err instanceof BusUnavailableError) return undefined;
        throw err;
      }
    });
    expect(outcome).toMatchObject({ status: "accepted", generation: 1 });
    // The subscription is back: a later append on the new server wakes the watcher.
    await waitFor(async () => {
      const before = inputWakes;
      await bus!.appendInput(r, 0n, new Uint8Array([7]), {});
      return waitFor(() => inputWakes > before, 500).catch(() => false);
    });
    stopWatch();
  });
});

/**
 * A TCP proxy in front of the shared Redis that, when armed, lets the next command run but
 * drops its reply together with the connection: the one case where the client cannot know
 * whether a write happened.
 */
async function replyDroppingProxy(target: URL): Promise<{ port: number; arm(): void; close(): Promise<void> }> {
  let armed = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 6379), target.hostname);
    sockets.add(client).add(upstream);
    client.on("data", (d) => upstream.write(d));
    upstream.on("data", (d) => {
      if (armed) {
        armed = false;
        client.destroy();
        upstream.destroy();
      } else client.write(d);
    });
    for (const s of [client, upstream]) {
      s.on("error", () => undefined);
      s.on("close", () => {
        client.destroy();
        upstream.destroy();
      });
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const addr = server.address();
  if (addr === null || typeof addr === "string") throw new Error("no port");
  return {
    port: addr.port,
    arm: () => {
      armed = true;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("Redis bus: a reply lost with the connection", () => {
  it("rejects as unavailable and never resends the write after reconnecting", async () => {
    const target = new URL(REDIS_URL);
    const proxy = await replyDroppingProxy(target);
    const prefix = uniquePrefix("lost-reply");
    const proxied = new URL(REDIS_URL);
    proxied.hostname = "127.0.0.1";
    proxied.port = String(proxy.port);
    const bus = createRedisBus({ redis: proxied.toString(), keyPrefix: prefix, options: CONTRACT_OPTIONS });
    const admin = new Redis(REDIS_URL);
    try {
      const r = { tenantId: "default", requestId: "lost-reply" };
      await bus.appendInput(r, 1n, new Uint8Array([1]), {});
      const epoch = (await bus.claim(r, 1)).epoch;
      proxy.arm();
      await expect(bus.appendOutput(r, 1, epoch, [new Uint8Array([42])], {})).rejects.toBeInstanceOf(BusUnavailableError);
      // The write did happen once; after the reconnect the next append lands right after it.
      const next = await waitFor(async () => {
        try {
          return await bus.appendOutput(r, 1, epoch, [new Uint8Array([43])], {});
        } catch (err) {
          if (err instanceof BusUnavailableError) return undefined;
          throw err;
        }
      });
      expect(next).toEqual({ ok: true, nextIndex: 2 });
      expect((await bus.readOutput(r, 1, 0, 10)).entries.map((e) => [...e.frame])).toEqual([[42], [43]]);
    } finally {
      await bus.close();
      await deleteKeys(admin, prefix);
      await admin.quit();
      await proxy.close();
    }
  });
});
