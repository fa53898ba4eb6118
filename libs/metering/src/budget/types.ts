/**
 * Monthly budgets (UTC calendar month): cost and token limits per tenant and per user.
 *
 * Guarantees of every BudgetGuard:
 * - `reserve` is atomic across callers (and across replicas for the Redis guard): the sum of
 *   admitted reservations plus recorded usage never exceeds a limit at admission time, so
 *   concurrent runs overspend by at most what their actual usage exceeds their reservations.
 * - An attempt is admitted only if, for every configured limit (tenant and user, cost and
 *   tokens), used + reserved-so-far + this estimate ≤ limit. An absent limit never refuses.
 * - Client-credential attempts (`chargeCost: false`) reserve and settle zero cost: they count
 *   toward token budgets only.
 * - A reservation is a lease (its `id`): it expires `leaseTtlMs` after it was made or last
 *   renewed (`renew`, while the attempt runs). An expired lease is released by the next
 *   reserve of its tenant (and of its user): its amount stops counting, so a crashed worker's
 *   reservation frees the budget after at most one TTL.
 * - `settle` replaces the reservation with the actual usage, at most once per lease id, by
 *   whichever guard (replica) settles first, with the reservation itself or a copy of it (a
 *   worker that takes a run over settles the reservation it finds in the run snapshot): a
 *   live lease adds actual − reserved, an expired one (already released) adds the full actual,
 *   a settled one nothing. Call it after the ledger row is written, also for failed attempts
 *   (actual may be zero). A lease released more than `expiredLeaseMemoryMs` (24 h) ago is
 *   forgotten: settling it then changes nothing (the ledger still holds the attempt).
 * - A counter that is missing (first use this month, Redis lost it, a new process) is rebuilt
 *   from `loadTotals` (the ledger) plus the scope's live leases before the check.
 */
import type { BudgetLimits } from "@byok/store";
import type { ReservationEstimate } from "../pricing.js";

export interface BudgetRequest {
  tenantId: string;
  userId: string | undefined;
  limits: { tenant?: BudgetLimits | undefined; user?: BudgetLimits | undefined };
  estimate: ReservationEstimate;
  /** false for client-credential runs: cost is neither checked nor counted. */
  chargeCost: boolean;
  now?: Date;
}

/**
 * An admitted reservation: plain data (JSON), so it can travel in a run snapshot to the worker
 * that takes the run over and settles it.
 */
export interface Reservation {
  /** The lease id. */
  readonly id: string;
  readonly tenantId: string;
  readonly userId: string | undefined;
  /** UTC month (YYYY-MM) the reservation counts in. */
  readonly month: string;
  readonly costMicroUsd: number;
  readonly tokens: number;
  readonly chargeCost: boolean;
}

export interface BudgetRefusal {
  reason: "budget";
  scope: "tenant" | "user";
  kind: "cost" | "tokens";
  limit: number;
  /** Usage plus live reservations when refused. */
  used: number;
  /** Safe for users; names the limit. */
  message: string;
}

export type ReserveResult = { ok: true; reservation: Reservation } | { ok: false; refused: BudgetRefusal };

/** Month totals from the ledger (cost counts gateway-credential attempts only). */
export type LoadMonthTotals = (tenantId: string, monthOf: Date, userId: string | undefined) => Promise<{ costMicroUsd: number; tokens: number }>;

/** A lease's state when `settle` found it: live (settled now), expired (settled now, in full), settled (before: no-op). */
export type LeaseState = "live" | "expired" | "settled";

/** How long an expired lease can still be settled by default (its full actual usage then counts). */
export const DEFAULT_EXPIRED_LEASE_MEMORY_MS = 24 * 3600_000;

/** Lease timing of a guard. */
export interface LeaseOptions {
  /** How long a lease lives without renewal (default DEFAULT_LEASE_TTL_MS). */
  leaseTtlMs?: number;
  /** How long a released (expired) lease can still be settled (default DEFAULT_EXPIRED_LEASE_MEMORY_MS). */
  expiredLeaseMemoryMs?: number;
}

export interface BudgetGuard {
  /** How long a lease lives without renewal. */
  readonly leaseTtlMs: number;
  reserve(req: BudgetRequest): Promise<ReserveResult>;
  /** Extends a live lease by `leaseTtlMs`; false when it expired or was settled (nothing changes). */
  renew(reservation: Reservation): Promise<boolean>;
  settle(reservation: Reservation, actual: { costMicroUsd: number; tokens: number }): Promise<LeaseState>;
  close(): Promise<void>;
}

/** Default lease TTL of the guards (the services pass GATEWAY_BUDGET_LEASE_TTL_MS). */
export const DEFAULT_LEASE_TTL_MS = 60_000;
