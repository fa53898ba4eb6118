import { redisTargetOf, type GatewayConfig } from "@byok/config";
import {
  createMemoryBudgetGuard, createMemoryLedgerSpool, createMemoryRateLimiter, createRedisBudgetGuard, createRedisLedgerSpool, createRedisRateLimiter,
  type BudgetGuard, type LedgerSpool, type RateLimiter, type RedisSource,
} from "@byok/metering";
import type { GatewayStore } from "@byok/store";

/** A process's metering: budgets, rate limits and the spool of ledger rows held during a database outage. */
export interface Metering {
  budgets: BudgetGuard;
  rates: RateLimiter;
  spool: LedgerSpool;
}

/** Redis budget guard + rate limiter + ledger spool sharing the bus key prefix (distributed mode). */
export function redisMetering(redis: RedisSource, store: GatewayStore, prefix: string, leaseTtlMs: number, spoolMaxRows: number): Metering {
  return {
    budgets: createRedisBudgetGuard({ redis, prefix, leaseTtlMs, loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) }),
    rates: createRedisRateLimiter({ redis, prefix }),
    spool: createRedisLedgerSpool({ redis, prefix, maxRows: spoolMaxRows }),
  };
}

/** In-memory budget guard + rate limiter + ledger spool (embedded mode, one process). */
export function memoryMetering(store: GatewayStore, leaseTtlMs: number, spoolMaxRows: number): Metering {
  return {
    budgets: createMemoryBudgetGuard({ leaseTtlMs, loadTotals: (t, m, u) => store.ledger.monthTotals(t, m, u) }),
    rates: createMemoryRateLimiter(),
    spool: createMemoryLedgerSpool({ maxRows: spoolMaxRows }),
  };
}

/** Closes what `meteringFor` / `memoryMetering` / `redisMetering` opened. */
export async function closeMetering(m: Metering): Promise<void> {
  await m.spool.close();
  await m.budgets.close();
  await m.rates.close();
}

/**
 * The metering of a process: on Redis (budgets and rate limits shared by every replica) when
 * REDIS_URL or Redis Cluster seed nodes are configured (every key of one tenant carries the
 * tenant's hash tag, so each script runs in one cluster slot); in memory without Redis (embedded).
 */
export function meteringFor(config: GatewayConfig, store: GatewayStore): Metering {
  const d = config.distributed;
  const onRedis = Boolean(config.redisUrl) || (d.redisClusterNodes?.length ?? 0) > 0;
  const spoolMaxRows = config.limits.ledgerSpoolMaxRows;
  return onRedis
    ? redisMetering({ target: redisTargetOf(config), name: "byok-metering" }, store, d.redisKeyPrefix, config.timers.budgetLeaseTtlMs, spoolMaxRows)
    : memoryMetering(store, config.timers.budgetLeaseTtlMs, spoolMaxRows);
}
