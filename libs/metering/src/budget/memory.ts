/**
 * In-memory BudgetGuard (embedded mode: one process). Atomicity comes from JavaScript's
 * single thread: after the counters are loaded, check-and-add runs with no await between.
 */
import { randomUUID } from "node:crypto";
import { utcMonth } from "../period.js";
import { budgetRefusal } from "./refusal.js";
import type { BudgetGuard, BudgetLimits, LoadMonthTotals, Reservation } from "./types.js";

interface Counter {
  cost: number;
  tokens: number;
}

export function createMemoryBudgetGuard(opts: { loadTotals: LoadMonthTotals }): BudgetGuard {
  const counters = new Map<string, Counter>();
  const loading = new Map<string, Promise<void>>();
  // Keyed by the reservation object: bounded by live reservations, nothing to prune.
  const settled = new WeakSet<Reservation>();
  let month = "";

  const keyOf = (m: string, tenantId: string, userId?: string) => JSON.stringify([m, tenantId, userId ?? null]);

  async function ensure(key: string, tenantId: string, userId: string | undefined, now: Date): Promise<void> {
    if (counters.has(key)) return;
    let p = loading.get(key);
    if (p === undefined) {
      p = opts.loadTotals(tenantId, now, userId).then(
        (t) => {
          if (!counters.has(key)) counters.set(key, { cost: t.costMicroUsd, tokens: t.tokens });
          loading.delete(key);
        },
        (e: unknown) => {
          loading.delete(key);
          throw e;
        },
      );
      loading.set(key, p);
    }
    await p;
  }

  return {
    async reserve(req) {
      const now = req.now ?? new Date();
      const m = utcMonth(now);
      if (m !== month) {
        // A new month: last month's counters are never read again.
        for (const k of counters.keys()) if (!k.startsWith(`["${m}"`)) counters.delete(k);
        month = m;
      }
      const tKey = keyOf(m, req.tenantId);
      const uKey = req.userId === undefined ? undefined : keyOf(m, req.tenantId, req.userId);
      await ensure(tKey, req.tenantId, undefined, now);
      if (uKey !== undefined) await ensure(uKey, req.tenantId, req.userId, now);

      // From here to the end: synchronous, hence atomic.
      const cost = req.chargeCost ? req.estimate.costMicroUsd : 0;
      const tokens = req.estimate.tokens;
      const scopes: [("tenant" | "user"), string, Counter, BudgetLimits | undefined][] = [["tenant", req.tenantId, must(counters.get(tKey)), req.limits.tenant]];
      if (uKey !== undefined) scopes.push(["user", req.userId ?? "", must(counters.get(uKey)), req.limits.user]);
      for (const [scope, who, c, limits] of scopes) {
        const costLimit = limits?.monthlyCostMicroUsd;
        if (req.chargeCost && costLimit !== undefined && c.cost + cost > costLimit) {
          return { ok: false, refused: budgetRefusal(scope, who, "cost", costLimit, c.cost) };
        }
        const tokenLimit = limits?.monthlyTokens;
        if (tokenLimit !== undefined && c.tokens + tokens > tokenLimit) {
          return { ok: false, refused: budgetRefusal(scope, who, "tokens", tokenLimit, c.tokens) };
        }
      }
      for (const [, , c] of scopes) {
        c.cost += cost;
        c.tokens += tokens;
      }
      const reservation: Reservation = { id: randomUUID(), tenantId: req.tenantId, userId: req.userId, month: m, costMicroUsd: cost, tokens, chargeCost: req.chargeCost };
      return { ok: true, reservation };
    },

    async settle(r, actual) {
      if (settled.has(r)) return;
      settled.add(r);
      const dCost = (r.chargeCost ? actual.costMicroUsd : 0) - r.costMicroUsd;
      const dTokens = actual.tokens - r.tokens;
      for (const key of [keyOf(r.month, r.tenantId), ...(r.userId === undefined ? [] : [keyOf(r.month, r.tenantId, r.userId)])]) {
        const c = counters.get(key);
        // A counter dropped since (month rolled over) is rebuilt from the ledger, which has the row.
        if (c === undefined) continue;
        c.cost += dCost;
        c.tokens += dTokens;
      }
    },

    async close() {
      counters.clear();
    },
  };
}

function must<T>(v: T | undefined): T {
  if (v === undefined) throw new Error("budget counter missing after load");
  return v;
}
