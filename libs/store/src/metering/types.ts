import type { CredentialsSource, TokenCounts } from "@byok/protocol";

/**
 * Metering repositories: versioned prices, the usage ledger with its daily rollups, and the
 * audit log. Money is integer micro-USD; prices are micro-USD per million tokens.
 */

export interface PriceRecord {
  provider: string;
  model: string;
  version: number;
  inputPerMTok: number;
  outputPerMTok: number;
  cacheReadPerMTok: number;
  cacheWritePerMTok: number;
  effectiveFrom: Date;
}

export type NewPrice = Omit<PriceRecord, "version" | "effectiveFrom"> & { effectiveFrom?: Date };

export interface PriceRepository {
  /** Adds the next version for (provider, model); versions are 1, 2, 3 ... Returns the stored price. */
  set(p: NewPrice): Promise<PriceRecord>;
  /** The price in force at `at` (highest effective_from ≤ at, then highest version). */
  at(provider: string, model: string, at?: Date): Promise<PriceRecord | undefined>;
  /** Every version, by provider, model, version. */
  list(): Promise<PriceRecord[]>;
}

/** How an attempt ended, as its ledger row records it. */
export type AttemptOutcome = "ok" | "cancelled" | "failed" | "retried" | "interrupted";

/** One provider attempt. Holds ids and counts only, never prompt or completion text. */
export interface LedgerEntry extends TokenCounts {
  tenantId: string;
  userId: string | undefined;
  keyId: string | undefined;
  conversationId: string;
  requestId: string;
  originalRequestId: string | undefined;
  generation: number;
  modelCallId: string;
  attempt: number;
  provider: string;
  upstreamModel: string;
  /** The Cursor model id whose route was used. */
  route: string;
  credentialsSource: CredentialsSource;
  /** The provider's own usage object (counts only). */
  rawUsage: unknown;
  /** True when the provider reported no usage and the counts are the gateway's estimate. */
  estimated: boolean;
  priceVersion: number | undefined;
  /** What the tenant is charged: 0 for client-credential attempts. */
  costMicroUsd: number;
  ttftMs: number | undefined;
  /**
   * The gateway's own share of the time to first token, microseconds: from the provider's first
   * event to the attempt's first frame appended to the output bus (Cursor runs) or first byte
   * written to the caller (streaming compatible endpoints). undefined when not measured.
   */
  ttftOverheadUs: number | undefined;
  durationMs: number;
  outcome: AttemptOutcome;
  /** The recording owner's fencing epoch: refused (StoreError "fenced") if the run was claimed since. */
  epoch?: number;
}

export interface LedgerRow extends LedgerEntry {
  createdAt: Date;
}

export interface DailyUsage extends TokenCounts {
  tenantId: string;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  /** undefined for attempts without a user. */
  userId: string | undefined;
  model: string;
  attempts: number;
  estimatedAttempts: number;
  costMicroUsd: number;
}

export interface UsageQuery {
  /** Inclusive UTC day YYYY-MM-DD. */
  from?: string;
  /** Inclusive UTC day YYYY-MM-DD. */
  to?: string;
  userId?: string;
  model?: string;
}

/** Attempt outcomes and provider TTFT of one UTC day (from the ledger rows; the dashboard's error and latency plots). */
export interface DailyOutcomes {
  tenantId: string;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  attempts: number;
  ok: number;
  failed: number;
  retried: number;
  cancelled: number;
  interrupted: number;
  /** Over the day's attempts that reported a first event; undefined when none did. */
  ttftAvgMs: number | undefined;
  ttftP95Ms: number | undefined;
  /** The day's attempts with a measured gateway overhead (`ttftOverheadUs`): the weight of its mean. */
  overheadAttempts: number;
  /** Over those attempts; undefined when none had one. */
  overheadAvgUs: number | undefined;
  overheadP95Us: number | undefined;
}

/**
 * Requests of one UTC day and how many of them were refused (the refusal rate's numerator and
 * denominator): distinct request ids with a ledger row (an attempt reached a provider) or a
 * refusal row that day, and distinct request ids with a refusal row that day. A request whose
 * rows fall on two days counts on both.
 */
export interface DailyRequests {
  tenantId: string;
  day: string;
  requests: number;
  refused: number;
}

export interface UsageTotals {
  costMicroUsd: number;
  /** input + output + cache read + cache write. */
  tokens: number;
}

/** Why a request was refused before any provider attempt. */
export type RefusalReason = "rate_limited" | "budget_exhausted" | "unknown_model";

/** A request refused before any provider attempt: no usage, so no ledger row. */
export interface Refusal {
  tenantId: string;
  userId: string | undefined;
  keyId: string | undefined;
  requestId: string;
  /** The model id the caller asked for, when known. */
  route: string | undefined;
  reason: RefusalReason;
}

/** The tenant's refusals of one UTC day, by reason. */
export interface DailyRefusals {
  tenantId: string;
  day: string;
  rateLimited: number;
  budgetExhausted: number;
  unknownModel: number;
}

export interface LedgerRepository {
  /**
   * Records one attempt. Idempotent on (tenant, request, generation, model call, attempt):
   * a repeat is a no-op returning `inserted: false`. The row and its daily rollup are written
   * in one transaction, so rollups count every attempt exactly once.
   * `at` overrides created_at (tests, backfills).
   */
  record(e: LedgerEntry, at?: Date): Promise<{ inserted: boolean }>;
  /** The tenant's attempts for one request, by generation, model call, attempt. */
  forRequest(tenantId: string, requestId: string): Promise<LedgerRow[]>;
  /** Daily rollups of the tenant, by day, user, model. */
  daily(tenantId: string, q?: UsageQuery): Promise<DailyUsage[]>;
  /**
   * Totals of the UTC calendar month containing `monthOf`, for the tenant or one of its users
   * (rebuilds budget counters). Cost counts gateway-credential attempts only (others cost 0).
   */
  monthTotals(tenantId: string, monthOf: Date, userId?: string): Promise<UsageTotals>;
  /** Outcomes and TTFT per UTC day of the tenant's attempts (`model` filters on the upstream model), by day. */
  dailyOutcomes(tenantId: string, q?: UsageQuery): Promise<DailyOutcomes[]>;
  /** Records a refusal; idempotent on (tenant, request, reason). `at` overrides created_at. */
  recordRefusal(r: Refusal, at?: Date): Promise<{ inserted: boolean }>;
  /** The tenant's refusals per UTC day (`userId` filters; `model` is the route asked for). */
  dailyRefusals(tenantId: string, q?: UsageQuery): Promise<DailyRefusals[]>;
  /**
   * The tenant's requests and refused requests per UTC day (see DailyRequests). `userId`
   * filters both; `model` is the upstream model for ledger rows and the route asked for for refusals.
   */
  dailyRequests(tenantId: string, q?: UsageQuery): Promise<DailyRequests[]>;
}

export interface AuditEntry {
  tenantId: string | undefined;
  actor: string;
  action: string;
  target: string | undefined;
  /** Ids and counts, never secrets. */
  details: Record<string, unknown>;
}

export interface AuditRecord extends AuditEntry {
  id: number;
  createdAt: Date;
}

export interface AuditRepository {
  append(e: AuditEntry): Promise<void>;
  /** Newest first; `tenantId` filters to one tenant's entries. */
  list(q?: { tenantId?: string; limit?: number }): Promise<AuditRecord[]>;
}
