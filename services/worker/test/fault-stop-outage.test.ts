// A worker told to stop while Redis is down: its connections never close (a QUIT waits for a
// reconnect that does not come), so the stop is bounded by GATEWAY_SHUTDOWN_TIMEOUT_MS and the
// process exits 1 saying why, instead of hanging until a SIGKILL. Private redis-server, real process.
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "@byok/testing";
import { startTestCluster, type TestCluster } from "./process-harness.js";
import { freePort, haveRedisServer, killRedisServer, startRedisServer } from "./redis-servers.js";

describe.runIf(haveRedisServer)("stopping during a Redis outage (real process, private redis-server)", () => {
  let c: TestCluster;
  let redis: ChildProcess | undefined;
  beforeAll(async () => {
    const port = await freePort();
    redis = await startRedisServer(port);
    c = await startTestCluster({ ingress: 0, workers: 1, redisUrl: `redis://127.0.0.1:${port}`, env: { GATEWAY_SHUTDOWN_TIMEOUT_MS: "2000" } });
  });
  afterAll(async () => {
    await c?.close();
    if (redis) await killRedisServer(redis);
  });

  it("exits 1 once the stop has taken GATEWAY_SHUTDOWN_TIMEOUT_MS, and says why", async () => {
    const [worker] = c.workers;
    await killRedisServer(redis!);
    redis = undefined;
    // The outage as the worker lives it: its connections saw Redis go and are reconnecting in
    // vain. A SIGTERM before that (the sockets not yet closed) lets the QUITs go out on the dying
    // sockets and the stop finish at once, which is not the case under test.
    await waitFor(() => worker!.lines.some((l) => l.includes("ECONNREFUSED")), 10_000, "the worker noticing the outage");
    const t0 = Date.now();
    worker!.signal("SIGTERM");
    const code = await Promise.race([worker!.exited, new Promise((r) => setTimeout(() => r("still running"), 20_000))]);
    expect(code).toBe(1);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_900);
    expect(worker!.lines.join("\n")).toMatch(/graceful stop did not finish within 2000 ms \(is Redis or PostgreSQL unreachable\?\)/);
  });
});
