/**
 * The BudgetGuard contract both implementations pass. `make(loadTotals)` returns guards that
 * share one counter space (two for Redis: two connections, like two replicas).
 */
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { waitFor } from "@byok/testing";
import type { BudgetGuard, BudgetRequest, LeaseOptions, LoadMonthTotals } from "../src/index.js";

export type GuardFactory = (
  loadTotals: LoadMonthTotals,
  leases?: LeaseOptions,
) => Promise<{ guards: [BudgetGuard, BudgetGuard]; drop(): Promise<void> }>;

/** Lease TTL of the lease tests: long against event-loop lag on a loaded machine, short to wait out. */
const SHORT_LEASE_MS = 2_000;

const NOW = new Date("2026-11-15T12:00:00Z");
const noUsage: LoadMonthTotals = async () => ({ costMicroUsd: 0, tokens: 0 });

export function budgetContract(name: string, make: GuardFactory): void {
  describe(`BudgetGuard contract: ${name}`, () => {
    const opened: { drop(): Promise<void>; guards: BudgetGuard[] }[] = [];
    const open = async (load: LoadMonthTotals = noUsage, leases?: LeaseOptions) => {
      const g = await make(load, leases);
      opened.push(g);
      return g.guards;
    };
    afterAll(async () => {
      for (const g of opened) {
        await g.drop();
        for (const guard of g.guards) await guard.close();
      }
    });
    const req = (tenantId: string, over: Partial<BudgetRequest> = {}): BudgetRequest => ({
      tenantId,
      userId: undefined,
      limits: {},
      estimate: { costMicroUsd: 100, tokens: 1_000 },
      chargeCost: true,
      now: NOW,
      ...over,
    });

    it("admits without limits, and refuses once a tenant cost limit would be exceeded, naming it", async () => {
      const [g] = await open();
      const t = `t-${randomUUID()}`;
      expect((await g.reserve(req(t))).ok).toBe(true);
      const limits = { tenant: { monthlyCostMicroUsd: 250 } };
      expect((await g.reserve(req(t, { limits }))).ok).toBe(true);
      const refused = await g.reserve(req(t, { limits }));
      expect(refused).toMatchObject({ ok: false, refused: { reason: "budget", scope: "tenant", kind: "cost", limit: 250, used: 200 } });
      if (!refused.ok) expect(refused.refused.message).toMatch(new RegExp(`cost budget of \\$0\\.00025 of tenant ${t}`));
    });

    it("settles to the actual usage, freeing what was over-reserved", async () => {
      const [g] = await open();
      const t = `t-${randomUUID()}`;
      const limits = { tenant: { monthlyCostMicroUsd: 150 } };
      const first = await g.reserve(req(t, { limits }));
      if (!first.ok) throw new Error("expected admission");
      expect((await g.reserve(req(t, { limits }))).ok).toBe(false);
      await g.settle(first.reservation, { costMicroUsd: 30, tokens: 10 });
      await g.settle(first.reservation, { costMicroUsd: 30, tokens: 10 }); // twice: no-op
      expect((await g.reserve(req(t, { limits }))).ok).toBe(true); // 30 + 100 ≤ 150
      expect(await g.reserve(req(t, { limits }))).toMatchObject({ ok: false, refused: { used: 130 } });
    });

    it("checks token limits and user limits, each scope separately", async () => {
      const [g] = await open();
      const t = `t-${randomUUID()}`;
      const limits = { tenant: { monthlyTokens: 10_000 }, user: { monthlyTokens: 2_000 } };
      expect((await g.reserve(req(t, { userId: "alice", limits }))).ok).toBe(true);
      expect((await g.reserve(req(t, { userId: "alice", limits }))).ok).toBe(true);
      expect(await g.reserve(req(t, { userId: "alice", limits }))).toMatchObject({ ok: false, refused: { scope: "user", kind: "tokens", limit: 2_000 } });
      expect((await g.reserve(req(t, { userId: "bob", limits }))).ok).toBe(true); // bob has his own budget
      // The tenant saw all three: 3000 of 10000.
      expect(await g.reserve(req(t, { estimate: { costMicroUsd: 0, tokens: 7_001 }, limits }))).toMatchObject({ ok: false, refused: { scope: "tenant", kind: "tokens", used: 3_000 } });
    });

    it("client-credential runs count toward token budgets, never toward cost", async () => {
      const [g] = await open();
      const t = `t-${randomUUID()}`;
      const limits = { tenant: { monthlyCostMicroUsd: 100, monthlyTokens: 2_500 } };
      const a = await g.reserve(req(t, { limits, chargeCost: false }));
      const b = await g.reserve(req(t, { limits, chargeCost: false }));
      expect([a.ok, b.ok]).toEqual([true, true]);
      if (a.ok) await g.settle(a.reservation, { costMicroUsd: 999, tokens: 1_000 });
      expect((await g.reserve(req(t, { limits }))).ok).toBe(false); // tokens: 2000 + 1000 > 2500
      expect((await g.reserve(req(t, { limits, estimate: { costMicroUsd: 100, tokens: 500 } }))).ok).toBe(true); // cost still 0 + 100
    });

    it("rebuilds a missing counter from the ledger before deciding", async () => {
      const t = `t-${randomUUID()}`;
      const calls: [string, string | undefined][] = [];
      const [g] = await open(async (tenantId, monthOf, userId) => {
        calls.push([tenantId, userId]);
        expect(monthOf.toISOString().slice(0, 7)).toBe("2026-11");
        return userId === undefined ? { costMicroUsd: 950, tokens: 5 } : { costMicroUsd: 0, tokens: 0 };
      });
      expect(await g.reserve(req(t, { userId: "u", limits: { tenant: { monthlyCostMicroUsd: 1_000 } } }))).toMatchObject({ ok: false, refused: { used: 950 } });
      expect(calls).toEqual([[t, undefined], [t, "u"]].slice(0, calls.length));
      expect(calls[0]).toEqual([t, undefined]);
    });

    it("keeps months apart (UTC calendar months)", async () => {
      const [g] = await open();
      const t = `t-${randomUUID()}`;
      const limits = { tenant: { monthlyCostMicroUsd: 100 } };
      expect((await g.reserve(req(t, { limits, now: new Date("2026-10-31T23:59:59Z") }))).ok).toBe(true);
      expect((await g.reserve(req(t, { limits, now: new Date("2026-10-31T23:59:59Z") }))).ok).toBe(false);
      expect((await g.reserve(req(t, { limits, now: new Date("2026-11-01T00:00:00Z") }))).ok).toBe(true);
    });

    it("admits exactly 10 of 200 concurrent reservations against a budget that fits 10, across two guards", async () => {
      const [a, b] = await open();
      const t = `t-${randomUUID()}`;
      const limits = { tenant: { monthlyCostMicroUsd: 10 * 100 }, user: { monthlyCostMicroUsd: 1_000_000 } };
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).reserve(req(t, { userId: `u${i % 7}`, limits }))),
      );
      const admitted = results.filter((r) => r.ok);
      expect(admitted.length).toBeLessThanOrEqual(10);
      expect(admitted).toHaveLength(10);
      for (const r of results) if (!r.ok) expect(r.refused).toMatchObject({ scope: "tenant", kind: "cost", limit: 1_000 });
    });

    it("a lease nobody renews or settles expires and frees the budget; settled late, it adds its full usage once", async () => {
      const [g] = await open(noUsage, { leaseTtlMs: SHORT_LEASE_MS });
      const t = `t-${randomUUID()}`;
      const limits = { tenant: { monthlyCostMicroUsd: 150 } };
      const abandoned = await g.reserve(req(t, { limits }));
      if (!abandoned.ok) throw new Error("expected admission");
      expect(await g.reserve(req(t, { limits }))).toMatchObject({ ok: false, refused: { used: 100 } });
      // The owner died: no renewal, no settle. Once the lease expired the next reserve releases it.
      const next = await waitFor(async () => {
        const r = await g.reserve(req(t, { limits }));
        return r.ok ? r : undefined;
      }, 20_000, "the abandoned lease to expire");
      expect(await g.reserve(req(t, { limits }))).toMatchObject({ ok: false, refused: { used: 100 } }); // only `next` counts
      expect(await g.renew(abandoned.reservation)).toBe(false);
      // A late settle (the owner was only paused) counts its actual usage in full, once.
      expect(await g.settle(abandoned.reservation, { costMicroUsd: 30, tokens: 10 })).toBe("expired");
      expect(await g.settle(abandoned.reservation, { costMicroUsd: 30, tokens: 10 })).toBe("settled");
      expect(await g.reserve(req(t, { limits }))).toMatchObject({ ok: false, refused: { used: 130 } });
      expect(await g.settle(next.reservation, { costMicroUsd: 0, tokens: 0 })).toBe("live");
    });

    it("forgets a released lease after expiredLeaseMemoryMs: settling it then changes nothing", async () => {
      const [g] = await open(noUsage, { leaseTtlMs: SHORT_LEASE_MS, expiredLeaseMemoryMs: 1 });
      const t = `t-${randomUUID()}`;
      const limits = { tenant: { monthlyCostMicroUsd: 150 } };
      const abandoned = await g.reserve(req(t, { limits }));
      if (!abandoned.ok) throw new Error("expected admission");
      const next = await waitFor(async () => {
        const r = await g.reserve(req(t, { limits }));
        return r.ok ? r : undefined;
      }, 20_000, "the abandoned lease to expire");
      // Released more than 1 ms ago by now: the next reserve forgets it.
      await new Promise((r) => setTimeout(r, 20));
      expect(await g.reserve(req(t, { limits }))).toMatchObject({ ok: false, refused: { used: 100 } });
      expect(await g.settle(abandoned.reservation, { costMicroUsd: 30, tokens: 10 })).toBe("settled");
      expect(await g.settle(next.reservation, { costMicroUsd: 0, tokens: 0 })).toBe("live");
      expect(await g.reserve(req(t, { limits }))).toMatchObject({ ok: true }); // the forgotten 30 never counted
      expect(await g.reserve(req(t, { limits }))).toMatchObject({ ok: false, refused: { used: 100 } });
    });

    it("renewal keeps a lease counted past its TTL; settling ends it", async () => {
      const [g] = await open(noUsage, { leaseTtlMs: SHORT_LEASE_MS });
      const t = `t-${randomUUID()}`;
      const limits = { tenant: { monthlyCostMicroUsd: 150 } };
      const held = await g.reserve(req(t, { limits }));
      if (!held.ok) throw new Error("expected admission");
      const until = Date.now() + 2.5 * SHORT_LEASE_MS;
      while (Date.now() < until) {
        expect(await g.renew(held.reservation)).toBe(true);
        await new Promise((r) => setTimeout(r, SHORT_LEASE_MS / 8));
      }
      expect(await g.reserve(req(t, { limits }))).toMatchObject({ ok: false, refused: { used: 100 } });
      expect(await g.settle(held.reservation, { costMicroUsd: 20, tokens: 1 })).toBe("live");
      expect(await g.renew(held.reservation)).toBe(false);
      expect(await g.reserve(req(t, { limits }))).toMatchObject({ ok: true });
    });

    it("settles a lease once, by whichever guard comes first, also from a copy of the reservation (a run snapshot)", async () => {
      const [a, b] = await open();
      const t = `t-${randomUUID()}`;
      const limits = { tenant: { monthlyCostMicroUsd: 150 }, user: { monthlyCostMicroUsd: 150 } };
      const first = await a.reserve(req(t, { userId: "u1", limits }));
      if (!first.ok) throw new Error("expected admission");
      const copy = JSON.parse(JSON.stringify(first.reservation)) as typeof first.reservation;
      // The worker that took the run over settles the reservation from the snapshot …
      expect(await b.settle(copy, { costMicroUsd: 30, tokens: 10 })).toBe("live");
      // … and the old owner, resuming, changes nothing.
      expect(await a.settle(first.reservation, { costMicroUsd: 80, tokens: 10 })).toBe("settled");
      expect(await b.reserve(req(t, { userId: "u1", limits }))).toMatchObject({ ok: true });
      expect(await a.reserve(req(t, { userId: "u1", limits }))).toMatchObject({ ok: false, refused: { scope: "tenant", used: 130 } });
    });
  });
}
