/** The RateLimiter contract both implementations pass (two limiters = two replicas for Redis). */
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import type { RateLimiter, RateSubject } from "../src/index.js";

export type LimiterFactory = () => Promise<{ limiters: [RateLimiter, RateLimiter]; drop(): Promise<void> }>;

const NOW = new Date("2026-11-15T12:00:10Z");

export function rateContract(name: string, make: LimiterFactory): void {
  describe(`RateLimiter contract: ${name}`, () => {
    const opened: { drop(): Promise<void>; limiters: RateLimiter[] }[] = [];
    const open = async () => {
      const l = await make();
      opened.push(l);
      return l.limiters;
    };
    afterAll(async () => {
      for (const o of opened) {
        await o.drop();
        for (const l of o.limiters) await l.close();
      }
    });
    const subject = (tenantId: string, over: Partial<RateSubject> = {}): RateSubject => ({ tenantId, keyId: undefined, limits: {}, now: NOW, ...over });

    it("admits run starts up to the tenant limit per minute, then refuses until the next window", async () => {
      const [l] = await open();
      const t = `t-${randomUUID()}`;
      const limits = { tenant: { runStartsPerMinute: 3 } };
      for (let i = 0; i < 3; i++) expect((await l.tryStartRun(subject(t, { limits }))).ok).toBe(true);
      const refused = await l.tryStartRun(subject(t, { limits }));
      expect(refused).toMatchObject({ ok: false, refused: { reason: "rate", scope: "tenant", kind: "run_starts", limit: 3, retryAfterMs: 50_000 } });
      if (!refused.ok) expect(refused.refused.message).toContain("3 run starts per minute");
      // Windows are fixed UTC minutes: 50 s later the next window admits the full limit again.
      const next = new Date("2026-11-15T12:01:00Z");
      for (let i = 0; i < 3; i++) expect((await l.tryStartRun(subject(t, { limits, now: next }))).ok).toBe(true);
      expect((await l.tryStartRun(subject(t, { limits, now: next }))).ok).toBe(false);
    });

    it("limits each API key separately, and a refused start counts nowhere", async () => {
      const [l] = await open();
      const t = `t-${randomUUID()}`;
      const limits = { tenant: { runStartsPerMinute: 3 }, key: { runStartsPerMinute: 1 } };
      expect((await l.tryStartRun(subject(t, { keyId: "k1", limits }))).ok).toBe(true);
      expect(await l.tryStartRun(subject(t, { keyId: "k1", limits }))).toMatchObject({ ok: false, refused: { scope: "key", kind: "run_starts" } });
      expect((await l.tryStartRun(subject(t, { keyId: "k2", limits }))).ok).toBe(true);
      expect((await l.tryStartRun(subject(t, { keyId: "k3", limits }))).ok).toBe(true); // the refused k1 start did not count
      expect(await l.tryStartRun(subject(t, { keyId: "k4", limits }))).toMatchObject({ ok: false, refused: { scope: "tenant" } });
    });

    it("refuses new runs once the window's tokens reach the limit (tenant and key)", async () => {
      const [l] = await open();
      const t = `t-${randomUUID()}`;
      const limits = { key: { tokensPerMinute: 1_000 }, tenant: { tokensPerMinute: 5_000 } };
      expect((await l.tryStartRun(subject(t, { keyId: "k", limits }))).ok).toBe(true);
      await l.recordTokens({ tenantId: t, keyId: "k", now: NOW }, 1_000);
      expect(await l.tryStartRun(subject(t, { keyId: "k", limits }))).toMatchObject({ ok: false, refused: { scope: "key", kind: "tokens", limit: 1_000 } });
      expect((await l.tryStartRun(subject(t, { keyId: "other", limits }))).ok).toBe(true);
      await l.recordTokens({ tenantId: t, keyId: "other", now: NOW }, 4_000);
      expect(await l.tryStartRun(subject(t, { keyId: "third", limits }))).toMatchObject({ ok: false, refused: { scope: "tenant", kind: "tokens" } });
    });

    it("holds a limit under 100 concurrent starts across two limiters", async () => {
      const [a, b] = await open();
      const t = `t-${randomUUID()}`;
      const limits = { tenant: { runStartsPerMinute: 7 } };
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).tryStartRun(subject(t, { limits }))));
      expect(results.filter((r) => r.ok)).toHaveLength(7);
    });
  });
}
