/**
 * Redis BudgetGuard (distributed mode): one hash per (tenant, month) and per (tenant, user,
 * month), under the tenant's hash tag so one Lua script checks and adds to both atomically,
 * across every replica. Counters expire a week after their month ends; a missing counter is
 * seeded from the ledger (SET-if-absent, so concurrent seeders agree) and the reserve retried.
 */
import { randomUUID } from "node:crypto";
import { nextUtcMonthStart, utcMonth } from "../period.js";
import { openRedis, type RedisSource } from "../redis/connection.js";
import { escapeId, hashTag, runScript } from "@byok/redis";
import { budgetReserve, budgetSeed, budgetSettle } from "../redis/specs.js";
import { budgetRefusal } from "./refusal.js";
import type { BudgetGuard, LoadMonthTotals, Reservation } from "./types.js";

const KEEP_AFTER_MONTH_MS = 7 * 24 * 3600_000;

export interface RedisBudgetOptions {
  redis: RedisSource;
  /** Key prefix (tests use a unique one); default "byok". */
  prefix?: string;
  loadTotals: LoadMonthTotals;
}

export function createRedisBudgetGuard(opts: RedisBudgetOptions): BudgetGuard & { keyPrefix: string } {
  const { redis, close } = openRedis(opts.redis);
  const prefix = opts.prefix ?? "byok";
  const settled = new WeakSet<Reservation>();
  const keys = (month: string, tenantId: string, userId: string | undefined) => {
    const base = `${prefix}:budget:${hashTag(tenantId)}:${month}`;
    return { tenant: `${base}:tenant`, user: userId === undefined ? `${base}:tenant` : `${base}:user:${escapeId(userId)}` };
  };
  const lim = (n: number | undefined) => (n === undefined ? -1 : n);

  return {
    keyPrefix: prefix,

    async reserve(req) {
      const now = req.now ?? new Date();
      const month = utcMonth(now);
      const k = keys(month, req.tenantId, req.userId);
      const cost = req.chargeCost ? req.estimate.costMicroUsd : 0;
      // At most: seed tenant, seed user, then the final attempt.
      for (let round = 0; round < 4; round++) {
        const reply = await runScript(redis, budgetReserve, { keys: k, args: {
          hasUser: req.userId === undefined ? 0 : 1,
          chargeCost: req.chargeCost ? 1 : 0,
          cost,
          tokens: req.estimate.tokens,
          tenantCostLimit: lim(req.limits.tenant?.monthlyCostMicroUsd),
          tenantTokenLimit: lim(req.limits.tenant?.monthlyTokens),
          userCostLimit: lim(req.limits.user?.monthlyCostMicroUsd),
          userTokenLimit: lim(req.limits.user?.monthlyTokens),
        } });
        switch (reply.status) {
          case "ok":
            return { ok: true, reservation: { id: randomUUID(), tenantId: req.tenantId, userId: req.userId, month, costMicroUsd: cost, tokens: req.estimate.tokens, chargeCost: req.chargeCost } };
          case "refused": {
            const who = reply.scope === "tenant" ? req.tenantId : (req.userId ?? "");
            return { ok: false, refused: budgetRefusal(reply.scope, who, reply.kind, reply.limit, reply.used) };
          }
          case "missing": {
            const userId = reply.scope === "user" ? req.userId : undefined;
            const totals = await opts.loadTotals(req.tenantId, now, userId);
            await runScript(redis, budgetSeed, { keys: { counter: reply.scope === "user" ? k.user : k.tenant }, args: {
              cost: totals.costMicroUsd,
              tokens: totals.tokens,
              // At least an hour from the wall clock, so a counter for a past `now` is not born expired.
              expireAtMs: Math.max(nextUtcMonthStart(now).getTime() + KEEP_AFTER_MONTH_MS, Date.now() + 3600_000),
            } });
          }
        }
      }
      throw new Error("budget reserve: counters kept disappearing while seeding");
    },

    async settle(r, actual) {
      if (settled.has(r)) return;
      settled.add(r);
      await runScript(redis, budgetSettle, { keys: keys(r.month, r.tenantId, r.userId), args: {
        hasUser: r.userId === undefined ? 0 : 1,
        costDelta: (r.chargeCost ? actual.costMicroUsd : 0) - r.costMicroUsd,
        tokenDelta: actual.tokens - r.tokens,
      } });
    },

    close,
  };
}
