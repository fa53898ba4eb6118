// Real-process harness of the fault tests: spawns ingress and worker services (node --import
// tsx), each test cluster with its own bus key prefix, BullMQ prefix (hash tag) and Postgres
// schema, all removed afterwards. Waits are bounded polls, never fixed sleeps.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import pg from "pg";
import { createStore, type RetentionPolicy, type TenantLimits } from "@byok/store";
import { deleteKeysMatching, startSimulator, watchOutput, type Simulator } from "@byok/testing";

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
export const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const TEST_MODEL = "test-model";
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const MAIN = {
  ingress: fileURLToPath(new URL("../../ingress/src/main.ts", import.meta.url)),
  worker: fileURLToPath(new URL("../src/main.ts", import.meta.url)),
};

export type ServiceKind = "ingress" | "worker";

export interface ServiceProcess {
  kind: ServiceKind;
  /** Ingress: the Connect base URL; worker: its health URL. */
  url: string;
  /** Client name prefix of its Redis connections. */
  name: string;
  child: ChildProcess;
  pid: number;
  /** Every stdout/stderr line so far. */
  lines: string[];
  exitCode(): number | null | undefined;
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string | null>;
  signal(sig: NodeJS.Signals): void;
  waitForLine(re: RegExp, timeoutMs?: number): Promise<string>;
}

export { waitFor } from "@byok/testing";

/** How long one service may take to print BYOK_READY (tsx compiles on a loaded machine). */
export const SERVICE_START_MS = 90_000;

/** Spawns one service and resolves once it printed its BYOK_READY line. */
export async function spawnService(kind: ServiceKind, env: Record<string, string>, timeoutMs = SERVICE_START_MS): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", MAIN[kind]], {
    cwd: ROOT,
    env: { ...process.env, ...env, GATEWAY_HOST: "127.0.0.1", GATEWAY_PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const { lines, exited, exitCode, waitForLine } = watchOutput(child, kind);
  let ready: string;
  try {
    ready = await waitForLine(/^BYOK_READY /, timeoutMs);
  } catch (err) {
    // Never leave a half-started service behind.
    if (exitCode() === undefined) child.kill("SIGKILL");
    throw err;
  }
  const [, , url, name] = ready.split(" ");
  return {
    kind,
    url: url!,
    name: name!,
    child,
    pid: child.pid!,
    lines,
    exitCode,
    exited,
    signal: (sig) => {
      if (exitCode() === undefined) child.kill(sig);
    },
    waitForLine,
  };
}

export interface TestClusterOptions {
  ingress?: number;
  workers?: number;
  /** Extra environment of every service (timers, Redis target …). */
  env?: Record<string, string>;
  /** Redis for bus and queue (default the shared one). */
  redisUrl?: string;
  /** Postgres of the store (default the shared one). */
  databaseUrl?: string;
  /** Start-up bound of each service (default SERVICE_START_MS); raise it for clusters that start many at once. */
  startMs?: number;
  /** Tenants besides `default`, each with one API key (`TestCluster.tenantTokens`). */
  tenants?: { tenantId: string; retention: RetentionPolicy; limits?: TenantLimits }[];
}

export interface TestCluster {
  sim: Simulator;
  /** Environment every service of this cluster gets. */
  env: Record<string, string>;
  ingress: ServiceProcess[];
  workers: ServiceProcess[];
  keyPrefix: string;
  queuePrefix: string;
  schema: string;
  /** Postgres of the store (the schema `schema` in it). */
  databaseUrl: string;
  /** A gateway API key of the default tenant (distributed ingress authenticates with API keys). */
  authToken: string;
  /** An API key of each extra tenant of `TestClusterOptions.tenants`. */
  tenantTokens: Record<string, string>;
  redis: Redis;
  spawn(kind: ServiceKind, extraEnv?: Record<string, string>): Promise<ServiceProcess>;
  close(): Promise<void>;
}

/** Shortened timers so takeovers happen within a couple of seconds. */
export const FAST_TIMERS: Record<string, string> = {
  // Short enough for quick takeovers, long enough that a loaded CI machine does not cause false ones.
  GATEWAY_LOCK_DURATION_MS: "3000",
  GATEWAY_STALLED_INTERVAL_MS: "500",
  GATEWAY_JOB_BACKOFF_MS: "100",
  GATEWAY_HEARTBEAT_MS: "2000",
  GATEWAY_NOT_FOUND_WAIT_MS: "5000",
  GATEWAY_NEW_GENERATION_WAIT_MS: "200",
  GATEWAY_PRESENCE_CHECK_MS: "200",
  GATEWAY_RECONNECT_GRACE_MS: "15000",
  GATEWAY_FINISHED_RETENTION_MS: "60000",
  // Clients that do not answer KV blob requests (plain RunSSE readers) are not waited for long.
  GATEWAY_KV_ACK_TIMEOUT_MS: "300",
};

export async function startTestCluster(opts: TestClusterOptions = {}): Promise<TestCluster> {
  const id = randomUUID().slice(0, 8);
  const keyPrefix = `test:cluster:${id}`;
  const queuePrefix = `{test-q-${id}}`;
  const schema = `t_cluster_${id}`;
  const databaseUrl = opts.databaseUrl ?? DATABASE_URL;
  const sim = await startSimulator();
  const routeTarget = { provider: "openai-chat", model: "sim-model", baseUrl: `${sim.url}/v1`, apiKeyEnv: "TEST_PROVIDER_KEY" };
  // Migrate the private schema once, before any service starts (they would race otherwise).
  const store = await createStore({ driver: "postgres", url: databaseUrl, schema });
  await store.tenants.ensure({ tenantId: "default", name: "Default tenant" });
  const { secret: authToken } = await store.apiKeys.create({ tenantId: "default", name: "fault-tests" });
  const tenantTokens: Record<string, string> = {};
  for (const t of opts.tenants ?? []) {
    await store.tenants.create({ tenantId: t.tenantId, name: t.tenantId, retention: t.retention, ...(t.limits ? { limits: t.limits } : {}) });
    await store.routes.set(t.tenantId, TEST_MODEL, [routeTarget]);
    tenantTokens[t.tenantId] = (await store.apiKeys.create({ tenantId: t.tenantId, name: "fault-tests" })).secret;
  }
  await store.close();
  const redisUrl = opts.redisUrl ?? REDIS_URL;
  const env: Record<string, string> = {
    GATEWAY_MODE: "distributed",
    GATEWAY_AUTH_MODE: "api_key",
    REDIS_URL: redisUrl,
    DATABASE_URL: databaseUrl,
    GATEWAY_DATABASE_SCHEMA: schema,
    GATEWAY_REDIS_KEY_PREFIX: keyPrefix,
    GATEWAY_QUEUE_PREFIX: queuePrefix,
    GATEWAY_LOG_LEVEL: "info",
    GATEWAY_ALLOW_PRIVATE_BASE_URLS: "true",
    TEST_PROVIDER_KEY: "sk-cluster-test-0123456789abcdef",
    GATEWAY_ROUTES_JSON: JSON.stringify([
      { modelId: TEST_MODEL, targets: [routeTarget] },
    ]),
    ...FAST_TIMERS,
    ...opts.env,
  };
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  redis.on("error", () => undefined);
  const procs: ServiceProcess[] = [];
  const spawnOne = async (kind: ServiceKind, extra: Record<string, string> = {}) => {
    const p = await spawnService(kind, { ...env, ...extra }, opts.startMs);
    procs.push(p);
    return p;
  };
  const cleanup = async () => {
    for (const p of procs) p.signal("SIGKILL");
    await Promise.all(procs.map((p) => p.exited));
    await sim.close();
    await deleteKeysMatching(redis, `${keyPrefix}:*`).catch(() => undefined);
    await deleteKeysMatching(redis, `${queuePrefix}:*`).catch(() => undefined);
    redis.disconnect();
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  };
  // Every spawn settles (ready, or failed and killed) before we decide, so nothing is left running.
  const nIngress = opts.ingress ?? 2;
  const started = await Promise.allSettled([
    ...Array.from({ length: nIngress }, () => spawnOne("ingress")),
    ...Array.from({ length: opts.workers ?? 2 }, () => spawnOne("worker")),
  ]);
  const failure = started.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failure) {
    await cleanup();
    throw failure.reason;
  }
  const ready = started.map((r) => (r as PromiseFulfilledResult<ServiceProcess>).value);
  const [ingress, workers] = [ready.slice(0, nIngress), ready.slice(nIngress)];
  return {
    sim,
    env,
    ingress,
    workers,
    keyPrefix,
    queuePrefix,
    schema,
    databaseUrl,
    authToken,
    tenantTokens,
    redis,
    spawn: spawnOne,
    close: cleanup,
  };
}

/** JSON log lines of a process (pino), parsed; other lines skipped. */
export function logRecords(p: ServiceProcess): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const l of p.lines) {
    if (!l.startsWith("{")) continue;
    try {
      out.push(JSON.parse(l) as Record<string, unknown>);
    } catch {
      // not a log record
    }
  }
  return out;
}
