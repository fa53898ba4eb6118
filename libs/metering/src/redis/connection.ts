import { closeConnection, defaultTuning, defineScripts, openConnection, type RedisClient, type RedisTarget } from "@byok/redis";
import { ALL_SCRIPTS } from "./specs.js";

/**
 * Where metering talks to Redis: a target it connects to itself (one node or a Redis Cluster;
 * closed by the guard), or an existing connection (borrowed: left open).
 */
export type RedisSource = { target: RedisTarget; name?: string } | { client: RedisClient };

export interface OpenedRedis {
  redis: RedisClient;
  close(): Promise<void>;
}

/** Opens (or borrows) a connection and defines the metering scripts on it. */
export function openRedis(src: RedisSource): OpenedRedis {
  if ("client" in src) {
    defineScripts(src.client, ALL_SCRIPTS);
    return { redis: src.client, close: async () => {} };
  }
  // Errors surface on the commands (the meter fails closed); the listener only keeps an
  // outage from being reported as an unhandled 'error' event.
  const redis = openConnection(src.target, defaultTuning(src.name ?? "byok-metering"));
  defineScripts(redis, ALL_SCRIPTS);
  return { redis, close: () => closeConnection(redis) };
}
