// The admin process told to stop while PostgreSQL stopped answering (a partition: the sockets stay
// open, nothing comes back): the request waiting on its query never ends, so neither does the
// server's close; the stop is bounded by GATEWAY_SHUTDOWN_TIMEOUT_MS and the process exits 1
// saying why, as the other processes do. (An idle pool alone closes: pg does not wait for it.)
// Real process, real Postgres behind a TCP proxy the test freezes.
import { spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { startCountingProxy, waitFor, watchOutput } from "@byok/testing";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../../..");
const MAIN = join(ROOT, "services/admin/src/main.ts");
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const ADMIN_KEY = `admin-${randomBytes(12).toString("hex")}`;

describe("admin: stopping while PostgreSQL does not answer (real process)", () => {
  const schema = `t_admin_stop_${randomUUID().slice(0, 8)}`;
  afterAll(async () => {
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  });

  it("exits 1 once the stop has taken GATEWAY_SHUTDOWN_TIMEOUT_MS, and says why", async () => {
    const db = new URL(DATABASE_URL);
    const proxy = await startCountingProxy(`http://${db.hostname}:${db.port || 5432}`);
    const viaProxy = new URL(DATABASE_URL);
    viaProxy.port = String(proxy.port);
    const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
      cwd: ROOT,
      env: {
        ...process.env,
        GATEWAY_ADMIN_KEY: ADMIN_KEY,
        GATEWAY_ADMIN_PORT: "0",
        DATABASE_URL: viaProxy.toString(),
        GATEWAY_DATABASE_SCHEMA: schema,
        GATEWAY_KEK: randomBytes(32).toString("base64"),
        GATEWAY_SHUTDOWN_TIMEOUT_MS: "1500",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out = watchOutput(child, "admin");
    try {
      const line = await out.waitForLine(/admin API listening on http:\/\/\S+/, 90_000);
      const url = /listening on (http:\/\/\S+)/.exec(line)![1]!;
      const list = () => fetch(`${url}/v1/tenants`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      expect((await list()).status).toBe(200);
      proxy.freeze();
      // A request caught by the partition: its query gets no answer.
      const caught = list().catch(() => "cut");
      await waitFor(() => proxy.heldBytes() > 0, 30_000, "the request's query caught by the partition");
      const t0 = Date.now();
      child.kill("SIGTERM");
      const code = await Promise.race([out.exited, new Promise((r) => setTimeout(() => r("still running"), 20_000))]);
      expect(code).toBe(1);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1_400);
      expect(out.lines.join("\n")).toMatch(/admin: the graceful stop did not finish within 1500 ms \(is Redis or PostgreSQL unreachable\?\)/);
      expect(await caught).toBe("cut");
    } finally {
      child.kill("SIGKILL");
      await proxy.close();
    }
  }, 120_000);
});
