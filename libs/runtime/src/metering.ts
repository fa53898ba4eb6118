import { redisTargetOf, type GatewayConfig } from "@byok/config";
import {
  createMemoryBudgetGuard, createMemoryRateLimiter, createRedisBudgetGuard, createRedisRateLimiter,
  type BudgetGuard, type RateLimiter, type RedisSource,
} from "@byok/metering";
import type { GatewayStore } from "@byok/store";

/** Redis budget guard + rate limiter sharing the bus key prefix (distributed mode). */
export function redisMetering(
  redis: RedisSource, store: GatewayStore, prefix: string, leaseTtlMs: number,
): { budgets: BudgetGuard; rates: RateLimiter } {
  return {
    budgets: createRedisBudgetGuard({ redis, prefix, leaseTtlMs, loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) }),
    rates: createRedisRateLimiter({ redis, prefix }),
  };
}

/** In-memory budget guard + rate limiter (embedded mode, one process). */
export function memoryMetering(store: GatewayStore, leaseTtlMs: number): { budgets: BudgetGuard; rates: RateLimiter } {
  return {
    budgets: createMemoryBudgetGuard({ leaseTtlMs, loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) }),
    rates: createMemoryRateLimiter(),
  };
}

/**
 * The metering of a process: on Redis (budgets and rate limits shared by every replica) when
 * REDIS_URL or Redis Cluster seed nodes are configured (every key of one tenant carries the
 * tenant's hash tag, so each script runs in one cluster slot); in memory without Redis (embedded).
 */
export function meteringFor(config: GatewayConfig, store: GatewayStore): { budgets: BudgetGuard; rates: RateLimiter } {
  const d = config.distributed;
  const onRedis = Boolean(config.redisUrl) || (d.redisClusterNodes?.length ?? 0) > 0;
  return onRedis
    ? redisMetering({ target: redisTargetOf(config), name: "byok-metering" }, store, d.redisKeyPrefix, config.timers.budgetLeaseTtlMs)
    : memoryMetering(store, config.timers.budgetLeaseTtlMs);
}
