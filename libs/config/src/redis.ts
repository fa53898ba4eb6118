import type { GatewayConfig } from "./load.js";

/** Where a distributed-mode process finds Redis: a cluster's seed nodes, or one URL. */
export type RedisLocation = string | { cluster: { host: string; port: number }[] };

/** The Redis of a distributed-mode process: a cluster when seed nodes are configured, else REDIS_URL. */
export function redisTargetOf(config: GatewayConfig): RedisLocation {
  const nodes = config.distributed.redisClusterNodes;
  if (nodes && nodes.length > 0) {
    return { cluster: nodes.map((n) => ({ host: n.slice(0, n.lastIndexOf(":")), port: Number(n.slice(n.lastIndexOf(":") + 1)) })) };
  }
  if (!config.redisUrl) throw new Error("distributed mode needs REDIS_URL or GATEWAY_REDIS_CLUSTER_NODES");
  return config.redisUrl;
}

/** The bus's limits and retention from the configuration (the shape of `BusOptions`). */
export function busOptionsOf(config: GatewayConfig): {
  seqnoWindow: number;
  maxOutputFrames: number;
  maxInputEntries: number;
  finishedRetentionMs: number;
  sequenceStateTtlMs: number;
} {
  return {
    seqnoWindow: config.limits.seqnoWindow,
    maxOutputFrames: config.limits.maxOutputFrames,
    maxInputEntries: config.limits.maxInputEntries,
    finishedRetentionMs: config.timers.finishedRetentionMs,
    sequenceStateTtlMs: config.timers.sequenceStateTtlMs,
  };
}
