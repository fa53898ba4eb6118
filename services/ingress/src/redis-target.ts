import type { RedisTarget } from "@byok/bus";
import type { GatewayConfig } from "@byok/config";

/** The Redis of a distributed-mode process: a cluster when seed nodes are configured, else REDIS_URL. */
export function redisTargetOf(config: GatewayConfig): RedisTarget {
  const nodes = config.distributed.redisClusterNodes;
  if (nodes && nodes.length > 0) {
    return { cluster: nodes.map((n) => ({ host: n.slice(0, n.lastIndexOf(":")), port: Number(n.slice(n.lastIndexOf(":") + 1)) })) };
  }
  if (!config.redisUrl) throw new Error("distributed mode needs REDIS_URL or GATEWAY_REDIS_CLUSTER_NODES");
  return config.redisUrl;
}
