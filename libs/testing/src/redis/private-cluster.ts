// A private 3-node Redis Cluster (no replicas) from redis-server binaries, for tests that must
// see cross-slot and MOVED behaviour: never the shared Redis.
import { execFile, type ChildProcess } from "node:child_process";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { waitFor } from "../wait.js";
import { freePort, killRedisServer, startRedisServer } from "./private-server.js";

const run = promisify(execFile);

export interface PrivateRedisCluster {
  ports: number[];
  /** "127.0.0.1:port" of every node (the GATEWAY_REDIS_CLUSTER_NODES form). */
  nodes: string[];
  /** SIGKILLs every node. */
  close(): Promise<void>;
}

/** Starts `size` cluster-enabled nodes, joins them with `redis-cli --cluster create`, waits for state ok. */
export async function startRedisCluster(size = 3): Promise<PrivateRedisCluster> {
  const ports: number[] = [];
  const children: ChildProcess[] = [];
  const close = async () => {
    for (const c of children) await killRedisServer(c);
  };
  try {
    for (let i = 0; i < size; i++) {
      const port = await freePort();
      ports.push(port);
      children.push(await startRedisServer(port, ["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`, "--cluster-node-timeout", "2000"]));
    }
    await run("redis-cli", ["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"]);
    for (const port of ports) {
      const r = new Redis({ port, lazyConnect: true });
      try {
        await r.connect();
        await waitFor(async () => String(await r.cluster("INFO")).includes("cluster_state:ok"), 20_000, `cluster state ok on ${port}`);
      } finally {
        r.disconnect();
      }
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { ports, nodes: ports.map((p) => `127.0.0.1:${p}`), close };
}
