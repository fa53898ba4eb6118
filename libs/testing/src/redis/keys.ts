import type { Redis } from "ioredis";

/** Deletes a test's keys with SCAN MATCH + UNLINK (the Redis is shared: never FLUSHDB). */
export async function deleteKeysMatching(redis: Redis, pattern: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== "0");
}
