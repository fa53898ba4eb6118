/**
 * Distributed mode's spool: one Redis list `<prefix>:ledger-spool` of JSON rows, appended at the
 * tail, drained from the head by any worker. A row leaves the list (LREM of its exact text)
 * only after it was written, so a worker that dies mid-drain leaves it for the next one; two
 * workers draining the same row write it twice, which the ledger's attempt key makes one row.
 */
import { openRedis, type RedisSource } from "../redis/connection.js";
import type { HeldLedgerRow, LedgerSpool } from "./types.js";

export interface RedisLedgerSpoolOptions {
  redis: RedisSource;
  /** Key prefix (the bus's); default "byok". */
  prefix?: string;
  /** Rows kept at most (checked before each append, so concurrent holders may pass it by a few). */
  maxRows: number;
}

export function createRedisLedgerSpool(opts: RedisLedgerSpoolOptions): LedgerSpool & { key: string } {
  const { redis, close } = openRedis(opts.redis);
  const key = `${opts.prefix ?? "byok"}:ledger-spool`;
  let closed = false;
  return {
    key,
    async hold(row) {
      if (closed || (await redis.llen(key)) >= opts.maxRows) return false;
      await redis.rpush(key, JSON.stringify(row));
      return true;
    },
    async peek(max) {
      if (closed) return [];
      const raw = await redis.lrange(key, 0, max - 1);
      return raw.map((text) => ({
        row: JSON.parse(text) as HeldLedgerRow,
        forget: async () => {
          await redis.lrem(key, 1, text);
        },
      }));
    },
    async size() {
      return redis.llen(key);
    },
    get closed() {
      return closed;
    },
    async close() {
      if (closed) return;
      closed = true;
      await close();
    },
  };
}
