// Private redis-server processes for fault tests (free ports, no persistence): never the shared Redis.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { waitFor } from "./process-harness.js";

export async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const addr = srv.address();
  srv.close();
  if (addr === null || typeof addr === "string") throw new Error("no port");
  return addr.port;
}

export const haveRedisServer = await new Promise<boolean>((resolve) => {
  const p = spawn("redis-server", ["--version"], { stdio: "ignore" });
  p.on("error", () => resolve(false));
  p.on("exit", (code) => resolve(code === 0));
});

/** Starts redis-server on `port` (no RDB, no AOF) and waits until it answers PING. */
export async function startRedisServer(port: number, extraArgs: string[] = []): Promise<ChildProcess> {
  const dir = mkdtempSync(join(tmpdir(), "byok-redis-"));
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...extraArgs],
    { stdio: "ignore" },
  );
  const probe = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on("error", () => undefined);
  await waitFor(async () => {
    try {
      if (probe.status !== "ready") await probe.connect();
      return (await probe.ping()) === "PONG";
    } catch {
      probe.disconnect();
      return false;
    }
  }, 10_000, `redis-server on ${port}`);
  probe.disconnect();
  return child;
}

export async function killRedisServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGKILL");
  await exited;
}
