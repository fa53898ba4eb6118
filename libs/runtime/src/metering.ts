import type { GatewayConfig } from "@byok/config";
import {
  createMemoryBudgetGuard, createMemoryRateLimiter, createRedisBudgetGuard, createRedisRateLimiter,
  type BudgetGuard, type RateLimiter, type RedisSource,
} from "@byok/metering";
import type { GatewayStore } from "@byok/store";

/** Redis budget guard + rate limiter sharing the bus key prefix (distributed mode). */
export function redisMetering(redis: RedisSource, store: GatewayStore, prefix: string): { budgets: BudgetGuard; rates: RateLimiter } {
  return {
    budgets: createRedisBudgetGuard({ redis, prefix, loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) }),
    rates: createRedisRateLimiter({ redis, prefix }),
  };
}

/** In-memory budget guard + rate limiter (embedded mode, one process). */
export function memoryMetering(store: GatewayStore): { budgets: BudgetGuard; rates: RateLimiter } {
  return {
    budgets: createMemoryBudgetGuard({ loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) }),
    rates: createMemoryRateLimiter(),
  };
}


/**
 * The metering of a process: on Redis (budgets and rate limits shared by every replica) when
 * REDIS_URL names one node; metering speaks to one Redis node, so on a Redis Cluster it falls
 * back to this process's memory (documented in docs/tenancy.md) rather than failing every run
 * on MOVED replies; in memory without Redis (embedded).
 */
export function meteringFor(config: GatewayConfig, store: GatewayStore): { budgets: BudgetGuard; rates: RateLimiter } {
  const d = config.distributed;
  return config.redisUrl && !d.redisClusterNodes ? redisMetering({ target: config.redisUrl }, store, d.redisKeyPrefix) : memoryMetering(store);
}
