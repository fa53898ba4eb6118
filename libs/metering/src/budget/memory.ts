/**
 * In-memory BudgetGuard (embedded mode: one process). Atomicity comes from JavaScript's
 * single thread: after the counters are loaded, check-and-add runs with no await between.
 * Same lease rules as the Redis guard (types.ts): per scope, live leases (expiry) and expired
 * ones (kept `expiredLeaseMemoryMs` so a late settle still counts), released at the scope's
 * next reserve.
 */
import type { BudgetLimits } from "@byok/store";
import { randomUUID } from "node:crypto";
import { utcMonth } from "../period.js";
import { budgetRefusal } from "./refusal.js";
import {
  DEFAULT_EXPIRED_LEASE_MEMORY_MS, DEFAULT_LEASE_TTL_MS, type BudgetGuard, type LeaseOptions, type LeaseState, type LoadMonthTotals, type Reservation,
} from "./types.js";

interface Lease {
  cost: number;
  tokens: number;
  /** Expiry while live; when it expired once expired. */
  at: number;
}

/** One budget scope (tenant or user, one month): the counter includes every live lease. */
interface Scope {
  cost: number;
  tokens: number;
  live: Map<string, Lease>;
  expired: Map<string, Lease>;
}

export interface MemoryBudgetOptions extends LeaseOptions {
  loadTotals: LoadMonthTotals;
}

export function createMemoryBudgetGuard(opts: MemoryBudgetOptions): BudgetGuard {
  const leaseTtlMs = opts.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
  const keepExpiredMs = opts.expiredLeaseMemoryMs ?? DEFAULT_EXPIRED_LEASE_MEMORY_MS;
  const scopes = new Map<string, Scope>();
  const loading = new Map<string, Promise<void>>();
  let month = "";

  const keyOf = (m: string, tenantId: string, userId?: string) => JSON.stringify([m, tenantId, userId ?? null]);
  const keysOf = (r: Pick<Reservation, "month" | "tenantId" | "userId">) =>
    [keyOf(r.month, r.tenantId), ...(r.userId === undefined ? [] : [keyOf(r.month, r.tenantId, r.userId)])];

  async function ensure(key: string, tenantId: string, userId: string | undefined, now: Date): Promise<void> {
    if (scopes.has(key)) return;
    let p = loading.get(key);
    if (p === undefined) {
      p = opts.loadTotals(tenantId, now, userId).then(
        (t) => {
          if (!scopes.has(key)) scopes.set(key, { cost: t.costMicroUsd, tokens: t.tokens, live: new Map(), expired: new Map() });
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

  /** Releases the scope's expired leases and forgets the ones expired too long ago. */
  function release(s: Scope, nowMs: number): void {
    for (const [id, l] of s.live) {
      if (l.at > nowMs) continue;
      s.live.delete(id);
      s.cost -= l.cost;
      s.tokens -= l.tokens;
      s.expired.set(id, { ...l, at: nowMs });
    }
    for (const [id, l] of s.expired) if (l.at < nowMs - keepExpiredMs) s.expired.delete(id);
  }

  return {
    leaseTtlMs,

    async reserve(req) {
      const now = req.now ?? new Date();
      const m = utcMonth(now);
      if (m !== month) {
        // A new month: last month's counters are never read again.
        for (const k of scopes.keys()) if (!k.startsWith(`["${m}"`)) scopes.delete(k);
        month = m;
      }
      const tKey = keyOf(m, req.tenantId);
      const uKey = req.userId === undefined ? undefined : keyOf(m, req.tenantId, req.userId);
      await ensure(tKey, req.tenantId, undefined, now);
      if (uKey !== undefined) await ensure(uKey, req.tenantId, req.userId, now);

      // From here to the end: synchronous, hence atomic.
      const nowMs = Date.now();
      const cost = req.chargeCost ? req.estimate.costMicroUsd : 0;
      const tokens = req.estimate.tokens;
      const checked: ["tenant" | "user", string, Scope, BudgetLimits | undefined][] = [["tenant", req.tenantId, must(scopes.get(tKey)), req.limits.tenant]];
      if (uKey !== undefined) checked.push(["user", req.userId ?? "", must(scopes.get(uKey)), req.limits.user]);
      for (const [, , s] of checked) release(s, nowMs);
      for (const [scope, who, s, limits] of checked) {
        const costLimit = limits?.monthlyCostMicroUsd;
        if (req.chargeCost && costLimit !== undefined && s.cost + cost > costLimit) {
          return { ok: false, refused: budgetRefusal(scope, who, "cost", costLimit, s.cost) };
        }
        const tokenLimit = limits?.monthlyTokens;
        if (tokenLimit !== undefined && s.tokens + tokens > tokenLimit) {
          return { ok: false, refused: budgetRefusal(scope, who, "tokens", tokenLimit, s.tokens) };
        }
      }
      const id = randomUUID();
      for (const [, , s] of checked) {
        s.cost += cost;
        s.tokens += tokens;
        s.live.set(id, { cost, tokens, at: nowMs + leaseTtlMs });
      }
      const reservation: Reservation = { id, tenantId: req.tenantId, userId: req.userId, month: m, costMicroUsd: cost, tokens, chargeCost: req.chargeCost };
      return { ok: true, reservation };
    },

    async renew(r) {
      const own = keysOf(r).map((k) => scopes.get(k));
      if (own[0]?.live.has(r.id) !== true) return false;
      const at = Date.now() + leaseTtlMs;
      for (const s of own) {
        const l = s?.live.get(r.id);
        if (l) l.at = at;
      }
      return true;
    },

    async settle(r, actual) {
      const cost = r.chargeCost ? actual.costMicroUsd : 0;
      let first: LeaseState | undefined;
      for (const key of keysOf(r)) {
        // A scope dropped since (month rolled over) is rebuilt from the ledger, which has the row.
        const s = scopes.get(key);
        let state: LeaseState = "settled";
        const live = s?.live.get(r.id);
        if (s && live) {
          s.live.delete(r.id);
          s.cost += cost - live.cost;
          s.tokens += actual.tokens - live.tokens;
          state = "live";
        } else if (s?.expired.delete(r.id)) {
          s.cost += cost;
          s.tokens += actual.tokens;
          state = "expired";
        }
        first ??= state;
      }
      return first ?? "settled";
    },

    async close() {
      scopes.clear();
    },
  };
}

function must<T>(v: T | undefined): T {
  if (v === undefined) throw new Error("budget counter missing after load");
  return v;
}
