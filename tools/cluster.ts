// `npm run cluster`: a local distributed gateway, 2 ingress replicas + 2 provider workers, against
// the local Redis and PostgreSQL. Prints the URLs; Ctrl-C stops everything (workers hand their
// running generations back first).
//
// Environment (all optional):
//   REDIS_URL      default redis://127.0.0.1:6379
//   DATABASE_URL   default postgres://postgres@127.0.0.1:5432/test
//   CLUSTER_INGRESS_PORTS  default 8787,8788      CLUSTER_WORKER_PORTS  default 8797,8798 (health/metrics)
//   every GATEWAY_* variable of the services (routes, timers, prefixes …) is passed through.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createStore } from "@byok/store";

const root = fileURLToPath(new URL("../", import.meta.url));
const env: Record<string, string | undefined> = {
  ...process.env,
  GATEWAY_MODE: "distributed",
  REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
  DATABASE_URL: process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test",
  GATEWAY_HOST: process.env.GATEWAY_HOST ?? "127.0.0.1",
};
const ingressPorts = (process.env.CLUSTER_INGRESS_PORTS ?? "8787,8788").split(",");
const workerPorts = (process.env.CLUSTER_WORKER_PORTS ?? "8797,8798").split(",");

// Migrate once before the replicas start, so they never race on the schema.
const store = await createStore({
  driver: "postgres",
  url: env.DATABASE_URL!,
  ...(env.GATEWAY_DATABASE_SCHEMA ? { schema: env.GATEWAY_DATABASE_SCHEMA } : {}),
});
await store.close();

const children: ChildProcess[] = [];
function start(kind: "ingress" | "worker", label: string, port: string): Promise<string> {
  const child = spawn(process.execPath, ["--import", "tsx", `services/${kind}/src/main.ts`], {
    cwd: root,
    env: { ...env, GATEWAY_PORT: port, GATEWAY_NAME: `byok-${label}` },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let buf = "";
    const onData = (chunk: Buffer) => {
      buf += chunk.toString();
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.startsWith("BYOK_READY ")) resolve(line.split(" ")[2]!);
        else process.stdout.write(`[${label}] ${line}\n`);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code, signal) => {
      process.stdout.write(`[${label}] exited (${code ?? signal})\n`);
      reject(new Error(`${label} exited before it was ready`));
    });
  });
}

try {
  const urls = await Promise.all([
    ...ingressPorts.map((p, i) => start("ingress", `ingress-${i + 1}`, p)),
    ...workerPorts.map((p, i) => start("worker", `worker-${i + 1}`, p)),
  ]);
  console.log("\nCursor BYOK Gateway, distributed (local cluster)");
  ingressPorts.forEach((_, i) => console.log(`  ingress-${i + 1}  ${urls[i]}   (BidiAppend, RunSSE, /healthz /readyz /metrics)`));
  workerPorts.forEach((_, i) => console.log(`  worker-${i + 1}   ${urls[ingressPorts.length + i]}   (/healthz /readyz /metrics)`));
  console.log(`  Redis ${env.REDIS_URL}  ·  PostgreSQL ${env.DATABASE_URL}  ·  Ctrl-C stops the cluster\n`);
} catch (err) {
  console.error(String(err));
  for (const c of children) c.kill("SIGKILL");
  process.exit(1);
}

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  for (const c of children) c.kill("SIGTERM");
  Promise.all(children.map((c) => (c.exitCode !== null ? undefined : new Promise((r) => c.once("exit", r))))).then(() => process.exit(0));
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
