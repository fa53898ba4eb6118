import { Redis, type RedisOptions } from "ioredis";
import { ALL_SCRIPTS } from "./specs.js";
import { defineScripts } from "./scripts.js";

/** A connection (owned: closed by the guard) or an existing one (borrowed: left open). */
export type RedisSource = { url: string; options?: RedisOptions } | { client: Redis };

export interface OpenedRedis {
  redis: Redis;
  close(): Promise<void>;
}

/** Opens (or borrows) a connection and defines the metering scripts on it. */
export function openRedis(src: RedisSource): OpenedRedis {
  if ("client" in src) {
    defineScripts(src.client, ALL_SCRIPTS);
    return { redis: src.client, close: async () => {} };
  }
  const redis = new Redis(src.url, { lazyConnect: false, maxRetriesPerRequest: 2, ...src.options });
  // Errors surface on the commands; an unhandled 'error' event would crash the process.
  redis.on("error", () => {});
  defineScripts(redis, ALL_SCRIPTS);
  return {
    redis,
    close: async () => {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
