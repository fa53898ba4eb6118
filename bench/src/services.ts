// Processes of the benchmark: a private redis-server, distributed services, the embedded gateway.
import { execSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { randomUUID } from "node:crypto";
import pg from "pg";
import { createStore } from "@byok/store";
import { freePort, killRedisServer, startRedisServer, watchOutput } from "@byok/testing";

export { freePort };

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** A private redis-server (no persistence): the benchmark never measures the shared Redis. */
export async function startRedis(): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  const port = await freePort();
  const child = await startRedisServer(port, ["--maxclients", "50000"]);
  return { url: `redis://127.0.0.1:${port}`, port, stop: () => killRedisServer(child) };
}

export interface Proc {
  url: string;
  name: string;
  pid: number;
  child: ChildProcess;
  lines: string[];
  kill(sig?: NodeJS.Signals): Promise<void>;
}

/** The ready line of each kind: `BYOK_READY <kind> <url> <name>`, `… listening on <url>`, `RELAY_READY <url>`. */
const READY_LINE = /^BYOK_READY \S+ (\S+) (\S+)|listening on (\S+)|^RELAY_READY (\S+)/;
/** How long a service may take to print its ready line (tsx compiles on a loaded machine). */
const SPAWN_READY_MS = 180_000;

/**
 * Spawns a service and resolves with its URL once ready. Distributed services print
 * `BYOK_READY <kind> <url> <name>`; the embedded gateway prints `… listening on <url>`; the
 * direct relay (bench/src/relay.ts) `RELAY_READY <url>`.
 */
export async function spawnProc(
  entry: "ingress" | "worker" | "gateway" | "relay",
  env: Record<string, string>,
  nodeArgs: string[] = [],
  /**
   * Run the compiled build as the image does (bin/byok.mjs; needs `npm run build`), not the
   * sources under tsx. Default: BENCH_DIST=1 in the environment.
   */
  dist = process.env.BENCH_DIST === "1",
): Promise<Proc> {
  const main = entry === "relay" ? "bench/src/relay.ts" : `services/${entry}/src/main.ts`;
  const args = dist && entry !== "relay" ? ["--conditions=byok-dist", "bin/byok.mjs", entry] : ["--import", "tsx", main];
  // BENCH_NODE_ARGS: V8/Node flags for every gateway process of a bench (e.g. GC settings).
  const benchArgs = entry === "relay" ? [] : (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const child = spawn(process.execPath, [...benchArgs, ...nodeArgs, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const out = watchOutput(child, entry);
  let ready: string;
  try {
    ready = await out.waitForLine(READY_LINE, SPAWN_READY_MS);
  } catch (err) {
    if (out.exitCode() === undefined) child.kill("SIGKILL");
    throw err;
  }
  const m = READY_LINE.exec(ready)!;
  const url = (m[1] ?? m[3] ?? m[4])!;
  const name = m[2] ?? entry;
  const lines = out.lines;
  return {
    url,
    name,
    pid: child.pid!,
    child,
    lines,
    async kill(sig = "SIGKILL") {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill(sig);
      await exited;
    },
  };
}

/** A gauge or counter value from a process's Prometheus text page. */
export async function metric(baseUrl: string, name: string): Promise<number> {
  return metricIn(await metricsPage(baseUrl), name);
}

/** A process's Prometheus text page (one scrape: read several values of one moment from it). */
export async function metricsPage(baseUrl: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      // A fresh connection each time: a pooled keep-alive socket may have been closed by the server.
      return await (await fetch(`${baseUrl}/metrics`, { headers: { connection: "close" } })).text();
    } catch (err) {
      if (attempt >= 3) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** A gauge or counter value from a Prometheus text page. */
export function metricIn(text: string, name: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  if (!line) throw new Error(`metric ${name} not found`);
  return Number(line.slice(line.lastIndexOf(" ") + 1));
}

/** CPU seconds (user + system) a process has used so far (Linux /proc; clock ticks of 10 ms). */
export function cpuSeconds(pid: number): number {
  const t = cpuTimes(pid);
  return t.user + t.system;
}

/** A process's CPU seconds in user space and in the kernel (its syscalls: socket writes and reads). */
export function cpuTimes(pid: number): { user: number; system: number } {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
    return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
  } catch {
    return { user: Number.NaN, system: Number.NaN };
  }
}

/**
 * A process's read and write syscalls so far (Linux /proc/<pid>/io, all its threads): on
 * loopback each socket write also runs the receiver's TCP path, so fewer writes is less CPU.
 */
export function ioSyscalls(pid: number): { reads: number; writes: number } {
  try {
    const fields = new Map(readFileSync(`/proc/${pid}/io`, "utf8").split("\n").map((l) => l.split(": ") as [string, string]));
    return { reads: Number(fields.get("syscr")), writes: Number(fields.get("syscw")) };
  } catch {
    return { reads: Number.NaN, writes: Number.NaN };
  }
}

/** The pid of the redis-server listening on `port`. */
export function redisPid(port: number): number | undefined {
  try {
    const out = execSync(`pgrep -f "redis-server 127.0.0.1:${port}"`).toString().trim().split("\n")[0];
    return out ? Number(out) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A private Postgres schema for a distributed run: the default tenant and one API key (the
 * distributed ingress authenticates with API keys), and the gateway settings that point at it.
 * `databaseUrl` is where the gateway connects (e.g. through the statement counter); `drop()`
 * removes the schema.
 */
export async function distributedSetup(
  base: Record<string, string>, redisUrl: string, adminUrl: string, databaseUrl = adminUrl,
): Promise<{ env: Record<string, string>; key: string; schema: string; drop(): Promise<void> }> {
  const schema = `bench_${randomUUID().slice(0, 8)}`;
  const store = await createStore({ driver: "postgres", url: adminUrl, schema });
  await store.tenants.ensure({ tenantId: "default", name: "Default tenant" });
  const { secret: key } = await store.apiKeys.create({ tenantId: "default", name: "bench" });
  await store.close();
  const env = { ...base, GATEWAY_MODE: "distributed", REDIS_URL: redisUrl, DATABASE_URL: databaseUrl, GATEWAY_DATABASE_SCHEMA: schema, GATEWAY_AUTH_MODE: "api_key" };
  const drop = async () => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await c.end();
  };
  return { env, key, schema, drop };
}
