/**
 * The run engine's metering port (`RunMeter` of @byok/agent) over the store, a BudgetGuard
 * and a RateLimiter; the services pass `createRunMeter(...)` as the engine's `meter`.
 *
 * Sequence (README "How the engine uses it"):
 * - admitRun (once per new generation): `rates.tryStartRun` for the tenant and the API key.
 * - admitAttempt: price lookup, reservation = estimated input × input price + max output ×
 *   output price, `budgets.reserve` (cost charged only for gateway credentials).
 * - While the attempt runs its reservation (a lease) is renewed every third of the lease TTL;
 *   a crashed worker's renewals stop, so its lease expires and frees the budget.
 * - settleAttempt: one ledger row (idempotent per attempt), then `budgets.settle` with the
 *   real cost and tokens (at most once per lease, whoever settles: the ticket is plain data,
 *   so the engine keeps it in the run snapshot and a worker that takes the run over settles the
 *   cut attempt's lease with it), then `rates.recordTokens`. Client-credential attempts cost
 *   0 and count toward token budgets and rate limits only.
 *
 * - Database unreachable while writing the ledger row (`isStoreUnavailable`): the row is held in
 *   the spool, when one is given, and written by the meter's drain (every `drainEveryMs`, and
 *   by any process sharing the spool) once the database answers again; settleAttempt then
 *   does not fail. Held rows are written without the run fence: each is an attempt that ran,
 *   and the ledger's attempt key keeps it one row whoever owns the run now.
 *
 * Never throws into the engine for a policy decision; a store or Redis failure while admitting
 * refuses the attempt with a retryable `unavailable` error (fail closed: nothing unmetered runs).
 */
import type { AttemptInfo, AttemptResult, RunMeter } from "@byok/agent";
import type { RunError } from "@byok/protocol";
import { isStoreUnavailable, type BudgetLimits, type GatewayStore, type LedgerEntry, type RateLimits, type RefusalReason, type TenantRecord } from "@byok/store";
import type { BudgetGuard, Reservation } from "./budget/types.js";
import { costMicroUsd, estimateReservation, usageTokens, type Price } from "./pricing.js";
import type { RateLimiter } from "./rate/types.js";
import type { LedgerSpool } from "./spool/types.js";

export interface RunMeterOptions {
  store: Pick<GatewayStore, "tenants" | "prices" | "ledger">;
  budgets: BudgetGuard;
  rates: RateLimiter;
  /** Reserved output when the target sets no maxOutputTokens (default 4096). */
  defaultMaxOutputTokens?: number;
  /**
   * Told about every ledger row once it is written (a repeated record of the same attempt, as
   * after a takeover, is not reported again): the process's token and cost metrics count it.
   */
  onRecorded?: (entry: LedgerEntry) => void;
  /** Told about store/Redis failures (never given secrets or content). */
  onError?: (err: unknown, where: "admit_run" | "admit_attempt" | "renew" | "settle" | "record_refusal" | "spool", ref?: { tenantId: string; requestId: string }) => void;
  /**
   * Ledger rows the database could not take while unreachable are held here and written once
   * it answers (docs/reliability.md "Usage during a Postgres outage"). Without it such a row is
   * reported through onError and lost.
   */
  spool?: { spool: LedgerSpool; drainEveryMs: number };
  /**
   * Told what became of rows that went through the spool: `held` (kept), `recorded` (written
   * by a drain), `lost` (the spool was full or unreachable too).
   */
  onSpool?: (outcome: "held" | "recorded" | "lost", entry: LedgerEntry) => void;
  now?: () => Date;
}

/** What admitAttempt hands the engine: plain data (JSON), so it survives a takeover. */
interface Ticket {
  reservation: Reservation;
  price: Price | undefined;
}

// A dependency outage, not a fault of the request: retryable `unavailable` (docs/reliability.md).
const UNAVAILABLE: RunError = { kind: "gateway_unavailable", message: "Usage metering is unavailable right now; please retry." };

/** Held rows written per drain batch. */
const DRAIN_BATCH = 100;

export function createRunMeter(opts: RunMeterOptions): RunMeter & { drainSpool(): Promise<{ recorded: number; left: number }> } {
  const { store, budgets, rates } = opts;
  const now = opts.now ?? (() => new Date());
  const defaultMaxOut = opts.defaultMaxOutputTokens ?? 4096;
  // Renewal timers of this process's live leases, by lease id; stopped when settled.
  const renewals = new Map<string, NodeJS.Timeout>();
  const renewEveryMs = Math.max(1, Math.floor(budgets.leaseTtlMs / 3));

  function keepAlive(r: Reservation): void {
    const timer = setInterval(() => {
      budgets.renew(r).then(
        (live) => {
          if (!live) stopRenewing(r.id);
        },
        (err: unknown) => opts.onError?.(err, "renew"),
      );
    }, renewEveryMs);
    timer.unref();
    renewals.set(r.id, timer);
  }
  function stopRenewing(id: string): void {
    clearInterval(renewals.get(id));
    renewals.delete(id);
  }

  let draining: Promise<{ recorded: number; left: number }> | undefined;
  /** Writes held rows, oldest first, until the spool is empty or the database is still unreachable. */
  function drainSpool(): Promise<{ recorded: number; left: number }> {
    draining ??= (async () => {
      const sp = opts.spool?.spool;
      let recorded = 0;
      if (!sp) return { recorded, left: 0 };
      for (;;) {
        const batch = await sp.peek(DRAIN_BATCH);
        if (batch.length === 0) return { recorded, left: 0 };
        for (const held of batch) {
          // Without the fence (see above): the attempt ran; its key keeps it one row.
          const { epoch: _fence, ...entry } = held.row.entry;
          try {
            // Several processes drain the one spool: only the one whose write inserted the row
            // counts it (tokens, cost, `recorded`), so each metric moves once per row.
            if ((await store.ledger.record(entry, new Date(held.row.at))).inserted) {
              opts.onRecorded?.(entry);
              opts.onSpool?.("recorded", entry);
              recorded++;
            }
          } catch (err) {
            if (isStoreUnavailable(err)) return { recorded, left: await sp.size() };
            // A row the store refuses for good would block the spool: reported, then dropped.
            opts.onError?.(err, "spool");
            opts.onSpool?.("lost", entry);
          }
          await held.forget();
        }
      }
    })().finally(() => (draining = undefined));
    return draining;
  }
  if (opts.spool) {
    const sp = opts.spool.spool;
    const timer = setInterval(() => {
      if (sp.closed) return clearInterval(timer);
      drainSpool().catch((err: unknown) => opts.onError?.(err, "spool"));
    }, opts.spool.drainEveryMs);
    timer.unref();
  }

  /** Keeps a row the unreachable database could not take; false when it could not be kept. */
  async function hold(entry: LedgerEntry, at: Date): Promise<boolean> {
    const sp = opts.spool?.spool;
    if (!sp) return false;
    const held = await sp.hold({ entry, at: at.toISOString() }).catch((err: unknown) => {
      opts.onError?.(err, "spool");
      return false;
    });
    opts.onSpool?.(held ? "held" : "lost", entry);
    return held;
  }

  async function tenantOf(tenantId: string): Promise<TenantRecord | undefined> {
    return store.tenants.get(tenantId);
  }

  async function userLimits(tenant: TenantRecord | undefined, tenantId: string, userId: string | undefined): Promise<BudgetLimits | undefined> {
    if (userId === undefined) return undefined;
    const user = await store.tenants.getUser(tenantId, userId);
    const own = user?.limits ?? {};
    const merged: BudgetLimits = { ...tenant?.limits.perUser, ...own };
    return Object.keys(merged).length > 0 ? merged : undefined;
  }

  /** A refusal row for the dashboard's refusal rates; a failed write is reported, never fatal to the answer. */
  async function refused(ref: { tenantId: string; requestId: string }, principal: { userId: string | undefined; keyId: string | undefined }, route: string | undefined, reason: RefusalReason): Promise<void> {
    await store.ledger
      .recordRefusal({ tenantId: ref.tenantId, userId: principal.userId, keyId: principal.keyId, requestId: ref.requestId, route, reason })
      .catch((err: unknown) => opts.onError?.(err, "record_refusal"));
  }

  return {
    drainSpool,

    async unknownModel(ref, principal, modelId) {
      await refused(ref, principal, modelId, "unknown_model");
    },

    async admitRun(ref, principal, modelId) {
      try {
        const tenant = await tenantOf(ref.tenantId);
        const limits: { tenant?: RateLimits; key?: RateLimits } = {};
        if (tenant?.limits.rate) limits.tenant = tenant.limits.rate;
        if (tenant?.limits.perKeyRate && principal.keyId !== undefined) limits.key = tenant.limits.perKeyRate;
        const r = await rates.tryStartRun({ tenantId: ref.tenantId, keyId: principal.keyId, limits, now: now() });
        if (r.ok) return { ok: true };
        await refused(ref, principal, modelId, "rate_limited");
        return { ok: false, error: { kind: "rate_limited", message: r.refused.message } };
      } catch (err) {
        opts.onError?.(err, "admit_run", ref);
        return { ok: false, error: UNAVAILABLE };
      }
    },

    async admitAttempt(a) {
      try {
        const at = now();
        const tenant = await tenantOf(a.ref.tenantId);
        const price = toPrice(await store.prices.at(a.provider, a.upstreamModel, at));
        const estimate = estimateReservation({ inputTokens: a.estimatedInputTokens, maxOutputTokens: a.maxOutputTokens ?? defaultMaxOut }, price);
        const chargeCost = a.credentialsSource === "gateway";
        const limits = { tenant: tenant?.limits.tenant, user: await userLimits(tenant, a.ref.tenantId, a.principal.userId) };
        // An unpriced model would cost 0 and slip past every cost budget: refuse it instead.
        if (chargeCost && price === undefined && (limits.tenant?.monthlyCostMicroUsd !== undefined || limits.user?.monthlyCostMicroUsd !== undefined)) {
          return { ok: false, error: { kind: "unpriced_model", message: unpricedMessage(a.provider, a.upstreamModel) } };
        }
        const r = await budgets.reserve({
          tenantId: a.ref.tenantId,
          userId: a.principal.userId,
          limits,
          estimate: chargeCost ? estimate : { costMicroUsd: 0, tokens: estimate.tokens },
          chargeCost,
          now: at,
        });
        if (!r.ok) {
          await refused(a.ref, a.principal, a.modelId, "budget_exhausted");
          return { ok: false, error: { kind: "budget_exhausted", message: r.refused.message } };
        }
        const ticket: Ticket = { reservation: r.reservation, price };
        keepAlive(r.reservation);
        return { ok: true, ticket };
      } catch (err) {
        opts.onError?.(err, "admit_attempt", a.ref);
        return { ok: false, error: UNAVAILABLE };
      }
    },

    async settleAttempt(a, ticket, r) {
      const t = isTicket(ticket) ? ticket : undefined;
      const u = r.usage;
      const counts = {
        inputTokens: u.inputTokens, outputTokens: u.outputTokens, cacheReadTokens: u.cacheReadTokens,
        cacheWriteTokens: u.cacheWriteTokens, reasoningTokens: u.reasoningTokens,
      };
      const tokens = usageTokens(counts);
      if (t) stopRenewing(t.reservation.id);
      // An interrupted attempt cut before its ticket reached the run snapshot is recorded by
      // the worker that took over without one: it prices the row itself, and the dead
      // worker's lease expires.
      const price = t ? t.price : toPrice(await store.prices.at(a.provider, a.upstreamModel, now()).catch(() => undefined));
      const cost = a.credentialsSource === "gateway" && price ? costMicroUsd(counts, price) : 0;
      const entry: LedgerEntry = {
        tenantId: a.ref.tenantId,
        userId: a.principal.userId,
        keyId: a.principal.keyId,
        conversationId: a.conversationId,
        requestId: a.ref.requestId,
        originalRequestId: a.principal.originalRequestId,
        generation: a.generation,
        ...(a.epoch === undefined ? {} : { epoch: a.epoch }),
        modelCallId: a.modelCallId,
        attempt: a.attempt,
        provider: a.provider,
        upstreamModel: a.upstreamModel,
        route: a.modelId,
        credentialsSource: a.credentialsSource,
        rawUsage: u.estimated ? null : countsOnly(u.raw),
        ...counts,
        estimated: u.estimated,
        priceVersion: price?.version,
        costMicroUsd: cost,
        ttftMs: r.ttftMs,
        ttftOverheadUs: r.ttftOverheadUs === undefined ? undefined : Math.max(0, Math.round(r.ttftOverheadUs)),
        durationMs: Math.max(0, Math.round(r.durationMs)),
        outcome: r.outcome,
      };
      let failure: unknown;
      try {
        if ((await store.ledger.record(entry)).inserted) opts.onRecorded?.(entry);
      } catch (err) {
        if (!(isStoreUnavailable(err) && (await hold(entry, now())))) {
          failure = err;
          opts.onError?.(err, "settle", a.ref);
        }
      }
      try {
        const lease = t ? await budgets.settle(t.reservation, { costMicroUsd: cost, tokens }) : undefined;
        // A repeated settle (the worker that took the run over settling an attempt its previous
        // owner had settled) counts the tokens once.
        if (tokens > 0 && lease !== "settled") await rates.recordTokens({ tenantId: a.ref.tenantId, keyId: a.principal.keyId, now: now() }, tokens);
      } catch (err) {
        failure ??= err;
        opts.onError?.(err, "settle", a.ref);
      }
      if (failure !== undefined) throw failure;
    },
  };
}

function unpricedMessage(provider: string, model: string): string {
  return `The model ${model} (${provider}) has no price, and a cost budget applies to this tenant, so its cost could not be counted. An administrator must set its price (admin CLI: price set ${provider} ${model} --input <USD per M> --output <USD per M>).`;
}

function toPrice(p: Price | undefined): Price | undefined {
  return p === undefined
    ? undefined
    : { version: p.version, inputPerMTok: p.inputPerMTok, outputPerMTok: p.outputPerMTok, cacheReadPerMTok: p.cacheReadPerMTok, cacheWritePerMTok: p.cacheWritePerMTok };
}

/** A ticket of this meter, possibly read back from a run snapshot (JSON): checked field by field. */
function isTicket(t: unknown): t is Ticket {
  if (typeof t !== "object" || t === null || !("reservation" in t)) return false;
  const r = (t as { reservation: unknown }).reservation;
  if (typeof r !== "object" || r === null) return false;
  const v = r as Record<string, unknown>;
  return (
    typeof v.id === "string" && typeof v.tenantId === "string" && (v.userId === undefined || typeof v.userId === "string") &&
    typeof v.month === "string" && Number.isSafeInteger(v.costMicroUsd) && Number.isSafeInteger(v.tokens) && typeof v.chargeCost === "boolean"
  );
}

/**
 * The provider's raw usage object, keeping only numbers, booleans and nested objects of them
 * (ledger rows hold counts, never text).
 */
function countsOnly(raw: unknown, depth = 0): unknown {
  if (typeof raw === "number" || typeof raw === "boolean") return raw;
  if (raw === null || typeof raw !== "object" || depth > 4) return null;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    const c = countsOnly(v, depth + 1);
    if (c !== null) out[k] = c;
  }
  return out;
}
