/**
 * Redis BudgetGuard (distributed mode): per (tenant, month) and per (tenant, user, month) a
 * counter hash plus its live and expired lease sets, all under the tenant's hash tag, so one
 * Lua script releases expired leases, checks and adds atomically, across every replica (and
 * in one slot of a Redis Cluster). Lease expiry is Redis time, so replicas' clocks do not
 * matter. Keys expire a week after their month ends; a missing counter is seeded from the
 * ledger plus the scope's live leases (SET-if-absent, so concurrent seeders agree) and the
 * reserve retried.
 */
import { escapeId, hashTag, runScript } from "@byok/redis";
import { randomUUID } from "node:crypto";
import { nextUtcMonthStart, utcMonth } from "../period.js";
import { openRedis, type RedisSource } from "../redis/connection.js";
import { budgetRenew, budgetReserve, budgetSeed, budgetSettle } from "../redis/specs.js";
import { budgetRefusal } from "./refusal.js";
import {
  DEFAULT_EXPIRED_LEASE_MEMORY_MS, DEFAULT_LEASE_TTL_MS, type BudgetGuard, type LeaseOptions, type LoadMonthTotals, type Reservation,
} from "./types.js";

const KEEP_AFTER_MONTH_MS = 7 * 24 * 3600_000;

export interface RedisBudgetOptions extends LeaseOptions {
  redis: RedisSource;
  /** Key prefix (tests use a unique one); default "byok". */
  prefix?: string;
  loadTotals: LoadMonthTotals;
}

export function createRedisBudgetGuard(opts: RedisBudgetOptions): BudgetGuard & { keyPrefix: string } {
  const { redis, close } = openRedis(opts.redis);
  const prefix = opts.prefix ?? "byok";
  const leaseTtlMs = opts.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  const keepExpiredMs = opts.expiredLeaseMemoryMs ?? DEFAULT_EXPIRED_LEASE_MEMORY_MS;
  const keys = (month: string, tenantId: string, userId: string | undefined) => {
    const tenant = `${prefix}:budget:${hashTag(tenantId)}:${month}:tenant`;
    const user = userId === undefined ? tenant : `${prefix}:budget:${hashTag(tenantId)}:${month}:user:${escapeId(userId)}`;
    return {
      tenant, tenantLeases: `${tenant}:leases`, tenantExpired: `${tenant}:expired`,
      user, userLeases: `${user}:leases`, userExpired: `${user}:expired`,
    };
  };
  // The lease's reserved amounts travel in its member, so releasing it needs no other key.
  const member = (r: Pick<Reservation, "id" | "costMicroUsd" | "tokens">) => `${r.id}:${r.costMicroUsd}:${r.tokens}`;
  const lim = (n: number | undefined) => (n === undefined ? -1 : n);
  const expireAtOf = (now: Date) =>
    // At least an hour from the wall clock, so keys for a past `now` are not born expired.
    Math.max(nextUtcMonthStart(now).getTime() + KEEP_AFTER_MONTH_MS, Date.now() + 3600_000);

  return {
    keyPrefix: prefix,
    leaseTtlMs,

    async reserve(req) {
      const now = req.now ?? new Date();
      const month = utcMonth(now);
      const k = keys(month, req.tenantId, req.userId);
      const cost = req.chargeCost ? req.estimate.costMicroUsd : 0;
      const id = randomUUID();
      // At most: seed tenant, seed user, then the final attempt.
      for (let round = 0; round < 4; round++) {
        const reply = await runScript(redis, budgetReserve, {
          keys: k,
          args: {
            hasUser: req.userId === undefined ? 0 : 1,
            chargeCost: req.chargeCost ? 1 : 0,
            cost,
            tokens: req.estimate.tokens,
            tenantCostLimit: lim(req.limits.tenant?.monthlyCostMicroUsd),
            tenantTokenLimit: lim(req.limits.tenant?.monthlyTokens),
            userCostLimit: lim(req.limits.user?.monthlyCostMicroUsd),
            userTokenLimit: lim(req.limits.user?.monthlyTokens),
            lease: member({ id, costMicroUsd: cost, tokens: req.estimate.tokens }),
            leaseTtlMs,
            expireAtMs: expireAtOf(now),
            keepExpiredMs,
          },
        });
        switch (reply.status) {
          case "ok":
            return { ok: true, reservation: { id, tenantId: req.tenantId, userId: req.userId, month, costMicroUsd: cost, tokens: req.estimate.tokens, chargeCost: req.chargeCost } };
          case "refused": {
            const who = reply.scope === "tenant" ? req.tenantId : (req.userId ?? "");
            return { ok: false, refused: budgetRefusal(reply.scope, who, reply.kind, reply.limit, reply.used) };
          }
          case "missing": {
            const userId = reply.scope === "user" ? req.userId : undefined;
            const totals = await opts.loadTotals(req.tenantId, now, userId);
            await runScript(redis, budgetSeed, {
              keys: reply.scope === "user" ? { counter: k.user, leases: k.userLeases } : { counter: k.tenant, leases: k.tenantLeases },
              args: { cost: totals.costMicroUsd, tokens: totals.tokens, expireAtMs: expireAtOf(now) },
            });
          }
        }
      }
      throw new Error("budget reserve: counters kept disappearing while seeding");
    },

    async renew(r) {
      const k = keys(r.month, r.tenantId, r.userId);
      const expiresAt = await runScript(redis, budgetRenew, {
        keys: { tenantLeases: k.tenantLeases, userLeases: k.userLeases },
        args: { hasUser: r.userId === undefined ? 0 : 1, lease: member(r), leaseTtlMs },
      });
      return expiresAt !== undefined;
    },

    async settle(r, actual) {
      return runScript(redis, budgetSettle, {
        keys: keys(r.month, r.tenantId, r.userId),
        args: {
          hasUser: r.userId === undefined ? 0 : 1,
          lease: member(r),
          cost: r.chargeCost ? actual.costMicroUsd : 0,
          tokens: actual.tokens,
        },
      });
    },

    close,
  };
}
