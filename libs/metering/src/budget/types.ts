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
 * - `settle` replaces the reservation with the actual usage (adds actual − reserved); call it
 *   once per reservation, after the ledger row is written, also for failed attempts (actual
 *   may be zero). Settling twice is a no-op.
 * - A counter that is missing (first use this month, Redis lost it, a new process) is rebuilt
 *   from `loadTotals` (the ledger) before the check; in-flight reservations of the moment are
 *   then not counted (documented approximation).
 */
import type { ReservationEstimate } from "../pricing.js";

export interface BudgetLimits {
  /** micro-USD; absent = unlimited. */
  monthlyCostMicroUsd?: number;
  /** input + output + cache read + cache write; absent = unlimited. */
  monthlyTokens?: number;
}

export interface BudgetRequest {
  tenantId: string;
  userId: string | undefined;
  limits: { tenant?: BudgetLimits | undefined; user?: BudgetLimits | undefined };
  estimate: ReservationEstimate;
  /** false for client-credential runs: cost is neither checked nor counted. */
  chargeCost: boolean;
  now?: Date;
}

export interface Reservation {
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

export interface BudgetGuard {
  reserve(req: BudgetRequest): Promise<ReserveResult>;
  settle(reservation: Reservation, actual: { costMicroUsd: number; tokens: number }): Promise<void>;
  close(): Promise<void>;
}
