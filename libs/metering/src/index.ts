/**
 * @byok/metering: pricing, monthly budgets and per-minute rate limits, each behind one
 * interface with an in-memory implementation (embedded mode) and a Redis one (distributed).
 */
export { costMicroUsd, estimateReservation, formatMicroUsd, usageTokens, type Price, type ReservationEstimate } from "./pricing.js";
export { utcMonth, minuteWindow } from "./period.js";
export type { BudgetGuard, BudgetRefusal, BudgetRequest, LeaseOptions, LeaseState, LoadMonthTotals, Reservation, ReserveResult } from "./budget/types.js";
export { DEFAULT_EXPIRED_LEASE_MEMORY_MS, DEFAULT_LEASE_TTL_MS } from "./budget/types.js";
export { createMemoryBudgetGuard, type MemoryBudgetOptions } from "./budget/memory.js";
export { createRedisBudgetGuard, type RedisBudgetOptions } from "./budget/redis.js";
export type { RateLimiter, RateRefusal, RateResult, RateSubject } from "./rate/types.js";
export { createMemoryRateLimiter } from "./rate/memory.js";
export { createRedisRateLimiter, type RedisRateOptions } from "./rate/redis.js";
export type { RedisSource } from "./redis/connection.js";
export { createRunMeter, type RunMeterOptions } from "./run-meter.js";
export type { HeldLedgerRow, LedgerSpool, PeekedLedgerRow } from "./spool/types.js";
export { createMemoryLedgerSpool } from "./spool/memory.js";
export { createRedisLedgerSpool, type RedisLedgerSpoolOptions } from "./spool/redis.js";
