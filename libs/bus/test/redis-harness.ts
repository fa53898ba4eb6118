// Shared setup of the Redis bus tests: a unique key prefix per test file, and cleanup that
// deletes exactly that prefix's keys (SCAN + UNLINK; the Redis is shared, never FLUSHDB).
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { createRedisBus, type Bus, type BusOptions } from "../src/index.js";

export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

export function uniquePrefix(file: string): string {
  return `test:bus:${file}:${randomUUID().slice(0, 8)}`;
}

export async function deleteKeys(redis: Redis, prefix: string): Promise<number> {
  let cursor = "0";
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 500);
    cursor = next;
    if (keys.length > 0) deleted += await redis.unlink(...keys);
  } while (cursor !== "0");
  return deleted;
}

export interface RedisTestBus {
  bus: Bus;
  name: string;
}

export function openBus(prefix: string, options: BusOptions, url = REDIS_URL): RedisTestBus {
  const name = `bus-test-${randomUUID().slice(0, 8)}`;
  return { bus: createRedisBus({ redis: url, keyPrefix: prefix, options, name }), name };
}

export { waitFor } from "@byok/testing";
