// The image's processes, run from the build output exactly as the Dockerfile's ENTRYPOINT starts
// them (no Docker engine here): `npm run build`, then `node <entrypoint flags> bin/byok.mjs <process>`
// for every process the image offers. The entrypoint refuses TypeScript (--no-experimental-strip-types),
// so a process that started ran compiled dist/ only.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteKeysMatching, freePort, haveRedisServerBinary, killRedisServer, startRedisServer, watchOutput, type ProcessOutput } from "@byok/testing";
import { ROOT } from "./repo.js";

/** A private redis-server can be started and killed (never the shared one). */
const canStartRedis = await haveRedisServerBinary();
const ADMIN_KEY = "image-test-admin-key-0123456789";
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** The Dockerfile's ENTRYPOINT (exec form), with `node` replaced by this Node binary. */
function entrypoint(): string[] {
  const line = readFileSync(join(ROOT, "Dockerfile"), "utf8").split("\n").find((l) => l.startsWith("ENTRYPOINT "));
  if (!line) throw new Error("Dockerfile has no ENTRYPOINT");
  const argv = JSON.parse(line.slice("ENTRYPOINT ".length)) as string[];
  expect(argv[0]).toBe("node");
  return [process.execPath, ...argv.slice(1)];
}

interface Proc extends ProcessOutput {
  child: ChildProcess;
}

function start(args: string[], env: Record<string, string>): Proc {
  const [cmd, ...rest] = entrypoint();
  // Only what the process needs: no tsx loader or test runner variables leak in.
  const child = spawn(cmd!, [...rest, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  return { child, ...watchOutput(child, args[0]) };
}

/** The first capture group of the first output line matching `re`. */
async function captured(p: Proc, re: RegExp): Promise<string> {
  return re.exec(await p.waitForLine(re, 60_000))![1]!;
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  return { status: res.status, body: await res.text() };
}

/** SIGTERM, as Docker and Kubernetes stop a container; the process must exit 0 on its own. */
async function stop(p: Proc): Promise<number | string | null> {
  p.child.kill("SIGTERM");
  const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 20_000).unref());
  const code = await Promise.race([p.exited, timeout]);
  if (code === "timeout") {
    p.child.kill("SIGKILL");
    throw new Error(`did not exit within 20 s of SIGTERM:\n${p.lines.join("\n")}`);
  }
  return code;
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  await client.query(`drop schema if exists "${schema}" cascade`);
  await client.end();
}

const running: Proc[] = [];
const tracked = (p: Proc) => (running.push(p), p);

beforeAll(() => {
  // `npm test` builds before vitest, so this is an up-to-date incremental check there.
  const r = spawnSync(process.execPath, [join(ROOT, "tools/build.mjs")], { cwd: ROOT, encoding: "utf8", timeout: 240_000 });
  if (r.status !== 0) throw new Error(`npm run build failed:\n${r.stdout}\n${r.stderr}`);
}, 250_000);

afterAll(async () => {
  for (const p of running) if (p.exitCode() === undefined) p.child.kill("SIGKILL");
  await Promise.all(running.map((p) => p.exited));
});

describe("the image's entry point", () => {
  it("refuses an unknown process and a start without the byok-dist condition", () => {
    const [cmd, ...rest] = entrypoint();
    const unknown = spawnSync(cmd!, [...rest, "frontend"], { cwd: ROOT, encoding: "utf8" });
    expect(unknown.status).toBe(64);
    expect(unknown.stderr).toContain("usage: byok <gateway|ingress|worker|admin|migrate>");
    const plain = spawnSync(process.execPath, ["bin/byok.mjs", "gateway"], { cwd: ROOT, encoding: "utf8" });
    expect(plain.status).toBe(64);
    expect(plain.stderr).toContain("--conditions=byok-dist");
  });

  it("gateway: the embedded gateway starts from dist, answers /healthz, /readyz, /metrics and the healthcheck, and exits 0 on SIGTERM", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "byok-image-"));
    try {
      // PGlite, as the image runs by default: its thread (compiled pglite-host.js) starts from dist too.
      const gw = tracked(start(["gateway"], { GATEWAY_HOST: "127.0.0.1", GATEWAY_PORT: "0", GATEWAY_DATA_DIR: join(dataDir, "pglite"), GATEWAY_LOG_LEVEL: "warn" }));
      const url = await captured(gw, /listening on (http:\/\/\S+)/);
      expect(await get(`${url}/healthz`)).toEqual({ status: 200, body: "ok\n" });
      expect((await get(`${url}/readyz`)).status).toBe(200);
      expect((await get(`${url}/metrics`)).body).toContain("byok_run_sse_open");
      const port = new URL(url).port;
      const health = spawnSync(process.execPath, ["bin/healthcheck.mjs"], { cwd: ROOT, env: { GATEWAY_PORT: port, GATEWAY_ADMIN_PORT: port }, encoding: "utf8" });
      expect(health.status).toBe(0);
      expect(await stop(gw)).toBe(0);
      const after = spawnSync(process.execPath, ["bin/healthcheck.mjs"], { cwd: ROOT, env: { GATEWAY_PORT: port, GATEWAY_ADMIN_PORT: port }, encoding: "utf8" });
      expect(after.status).toBe(1);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  describe("distributed processes against the real Redis and PostgreSQL", () => {
    const id = randomUUID().slice(0, 8);
    const schema = `t_image_${id}`;
    const keyPrefix = `test:image:${id}`;
    const queuePrefix = `{test-image-${id}}`;
    const env = {
      GATEWAY_MODE: "distributed",
      GATEWAY_HOST: "127.0.0.1",
      GATEWAY_PORT: "0",
      DATABASE_URL,
      REDIS_URL,
      GATEWAY_DATABASE_SCHEMA: schema,
      GATEWAY_REDIS_KEY_PREFIX: keyPrefix,
      GATEWAY_QUEUE_PREFIX: queuePrefix,
      GATEWAY_LOG_LEVEL: "warn",
    };

    afterAll(async () => {
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      for (const pattern of [`${keyPrefix}:*`, `${queuePrefix}:*`]) await deleteKeysMatching(redis, pattern);
      redis.disconnect();
      await dropSchema(schema);
    });

    it("migrate applies every migration to DATABASE_URL and exits 0; a second run finds nothing to do", async () => {
      for (let run = 0; run < 2; run++) {
        const m = tracked(start(["migrate"], env));
        const code = await m.exited;
        expect(code, m.lines.join("\n")).toBe(0);
        const report = JSON.parse(m.lines.find((l) => l.includes("migrations applied"))!) as { schema: string; applied: string[]; known: string[] };
        expect(report.schema).toBe(schema);
        expect(report.known.length).toBeGreaterThan(0);
        expect(report.applied).toEqual(report.known);
      }
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      const { rows } = await client.query<{ n: string }>("select count(*)::text as n from information_schema.tables where table_schema = $1", [schema]);
      await client.end();
      expect(Number(rows[0]!.n)).toBeGreaterThan(3);
    });

    it("migrate without DATABASE_URL stops with a configuration error", async () => {
      const m = tracked(start(["migrate"], { GATEWAY_LOG_LEVEL: "warn" }));
      expect(await m.exited).toBe(1);
      expect(m.lines.join("\n")).toContain("migrate needs DATABASE_URL");
    });

    it("ingress, worker and admin start from dist, answer /healthz, and exit 0 on SIGTERM", async () => {
      const ingress = tracked(start(["ingress"], env));
      const worker = tracked(start(["worker"], env));
      const admin = tracked(start(["admin"], { ...env, GATEWAY_ADMIN_HOST: "127.0.0.1", GATEWAY_ADMIN_PORT: "0", GATEWAY_ADMIN_KEY: ADMIN_KEY, GATEWAY_KEK: randomBytes(32).toString("base64") }));
      const [ingressUrl, workerUrl, adminUrl] = await Promise.all([
        captured(ingress, /^BYOK_READY ingress (\S+)/),
        captured(worker, /^BYOK_READY worker (\S+)/),
        captured(admin, /admin API listening on (\S+)/),
      ]);
      for (const url of [ingressUrl, workerUrl, adminUrl]) expect(await get(`${url}/healthz`)).toEqual({ status: 200, body: "ok\n" });
      expect((await get(`${ingressUrl}/readyz`)).status).toBe(200);
      expect((await get(`${workerUrl}/readyz`)).status).toBe(200);
      const workerMetrics = (await get(`${workerUrl}/metrics`)).body;
      expect(workerMetrics).toContain("byok_runs_active");
      // Checked at the scrape against the real Redis and PostgreSQL.
      expect(workerMetrics).toContain('byok_dependency_up{dependency="redis"} 1');
      expect(workerMetrics).toContain('byok_dependency_up{dependency="postgres"} 1');
      expect((await get(`${ingressUrl}/metrics`)).body).toContain('byok_dependency_up{dependency="redis"} 1');
      // The admin API itself still wants its key; the image's CLI (as NOTES.txt runs it) has it.
      expect((await get(`${adminUrl}/v1/tenants`)).status).toBe(401);
      const cli = spawnSync(process.execPath, ["--conditions=byok-dist", "services/admin/dist/cli.js", "tenant", "list"], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", GATEWAY_ADMIN_URL: adminUrl, GATEWAY_ADMIN_KEY: ADMIN_KEY },
        encoding: "utf8",
        timeout: 30_000,
      });
      expect(cli.status, cli.stderr).toBe(0);
      expect(JSON.parse(cli.stdout)).toEqual({ tenants: expect.any(Array) });
      expect(await Promise.all([stop(ingress), stop(worker), stop(admin)])).toEqual([0, 0, 0]);
    });

    it.runIf(canStartRedis)("an ingress whose Redis dies reports byok_dependency_up 0 at the next scrape, and 1 again once it is back", async () => {
      const port = await freePort();
      let redis = await startRedisServer(port);
      try {
        const ingress = tracked(start(["ingress"], { ...env, REDIS_URL: `redis://127.0.0.1:${port}` }));
        const url = await captured(ingress, /^BYOK_READY ingress (\S+)/);
        expect((await get(`${url}/metrics`)).body).toContain('byok_dependency_up{dependency="redis"} 1');
        await killRedisServer(redis);
        expect((await get(`${url}/metrics`)).body).toContain('byok_dependency_up{dependency="redis"} 0');
        redis = await startRedisServer(port);
        const deadline = Date.now() + 20_000;
        let body = "";
        while (Date.now() < deadline && !body.includes('byok_dependency_up{dependency="redis"} 1')) body = (await get(`${url}/metrics`)).body;
        expect(body).toContain('byok_dependency_up{dependency="redis"} 1');
        expect(await stop(ingress)).toBe(0);
      } finally {
        await killRedisServer(redis);
      }
    });
  });
});
