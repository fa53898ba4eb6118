// Private redis-server processes (free port, no persistence) for fault tests and benchmarks:
// never the shared Redis.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const addr = srv.address();
  srv.close();
  if (addr === null || typeof addr === "string") throw new Error("no port");
  return addr.port;
}

/** Whether a `redis-server` binary is on the PATH. */
export function haveRedisServerBinary(): Promise<boolean> {
  return new Promise((resolve) => {
    const p = spawn("redis-server", ["--version"], { stdio: "ignore" });
    p.on("error", () => resolve(false));
    p.on("exit", (code) => resolve(code === 0));
  });
}

/** Starts redis-server on `port` (no RDB, no AOF, own temp dir) and waits until it answers PING. */
export async function startRedisServer(port: number, extraArgs: string[] = [], timeoutMs = 10_000): Promise<ChildProcess> {
  const dir = mkdtempSync(join(tmpdir(), "byok-redis-"));
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...extraArgs],
    { stdio: "ignore" },
  );
  const probe = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on("error", () => undefined);
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      try {
        if (probe.status !== "ready") await probe.connect();
        if ((await probe.ping()) === "PONG") return child;
      } catch {
        probe.disconnect();
      }
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`redis-server on ${port} did not answer within ${timeoutMs} ms`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    probe.disconnect();
  }
}

/** SIGKILLs a redis-server started here and waits for it to exit. */
export async function killRedisServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGKILL");
  await exited;
}
