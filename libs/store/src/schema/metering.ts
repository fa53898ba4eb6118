/**
 * Metering tables: the price table, the usage ledger (one row per provider attempt),
 * daily rollups maintained in the ledger insert's transaction, and the audit log.
 * Money is integer micro-USD everywhere (bigint); prices are micro-USD per million tokens.
 */
import { sql } from "drizzle-orm";
import { bigint, bigserial, boolean, check, date, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { createdAt, tstz } from "./columns.js";

const micro = (name: string) => bigint(name, { mode: "number" }).notNull().default(0);
const tokens = (name: string) => bigint(name, { mode: "number" }).notNull().default(0);

export const prices = pgTable(
  "prices",
  {
    provider: text("provider").notNull(),
    model: text("model").notNull(),
    /** 1, 2, 3 ... per (provider, model); ledger rows name the version they were priced with. */
    version: integer("version").notNull(),
    inputPerMTok: micro("input_per_mtok_micro_usd"),
    outputPerMTok: micro("output_per_mtok_micro_usd"),
    cacheReadPerMTok: micro("cache_read_per_mtok_micro_usd"),
    cacheWritePerMTok: micro("cache_write_per_mtok_micro_usd"),
    effectiveFrom: tstz("effective_from").notNull().defaultNow(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.provider, t.model, t.version] }),
    index("prices_effective_idx").on(t.provider, t.model, t.effectiveFrom.desc()),
  ],
);

export const usageLedger = pgTable(
  "usage_ledger",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    tenantId: text("tenant_id").notNull(),
    userId: text("user_id"),
    keyId: text("key_id"),
    conversationId: text("conversation_id").notNull(),
    requestId: text("request_id").notNull(),
    originalRequestId: text("original_request_id"),
    generation: integer("generation").notNull(),
    modelCallId: text("model_call_id").notNull(),
    attempt: integer("attempt").notNull(),
    provider: text("provider").notNull(),
    upstreamModel: text("upstream_model").notNull(),
    route: text("route").notNull(),
    credentialsSource: text("credentials_source").notNull(),
    rawUsage: jsonb("raw_usage").$type<unknown>(),
    inputTokens: tokens("input_tokens"),
    outputTokens: tokens("output_tokens"),
    cacheReadTokens: tokens("cache_read_tokens"),
    cacheWriteTokens: tokens("cache_write_tokens"),
    reasoningTokens: tokens("reasoning_tokens"),
    estimated: boolean("estimated").notNull(),
    priceVersion: integer("price_version"),
    costMicroUsd: micro("cost_micro_usd"),
    ttftMs: integer("ttft_ms"),
    /**
     * The gateway's own time to first token, microseconds: from the provider's first event to
     * the first frame of the attempt appended to the output bus (Cursor runs) or the first byte
     * written to the caller (streaming compatible endpoints). Null when none was measured.
     */
    ttftOverheadUs: integer("ttft_overhead_us"),
    durationMs: integer("duration_ms").notNull(),
    outcome: text("outcome").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    // Idempotency: a takeover (or a retried write) recording the same attempt is a no-op.
    // tenant_id leads so one tenant's ids can never suppress another tenant's rows.
    uniqueIndex("usage_ledger_attempt_uq").on(t.tenantId, t.requestId, t.generation, t.modelCallId, t.attempt),
    index("usage_ledger_tenant_time_idx").on(t.tenantId, t.createdAt),
    check("usage_ledger_outcome_ck", sql`${t.outcome} in ('ok', 'cancelled', 'failed', 'retried', 'interrupted')`),
    check("usage_ledger_source_ck", sql`${t.credentialsSource} in ('gateway', 'client')`),
  ],
);

/**
 * Requests the gateway refused before any provider attempt (a rate limit, an exhausted
 * budget, a model without a route): no usage, so not ledger rows, which stay one per provider
 * attempt. One row per (tenant, request, reason); a repeat (a retried write, a takeover) is a no-op.
 */
export const refusals = pgTable(
  "refusals",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    tenantId: text("tenant_id").notNull(),
    userId: text("user_id"),
    keyId: text("key_id"),
    requestId: text("request_id").notNull(),
    /** The model id the caller asked for, when the refusal knew it (a run-start rate limit may not). */
    route: text("route"),
    reason: text("reason").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("refusals_request_uq").on(t.tenantId, t.requestId, t.reason),
    index("refusals_tenant_time_idx").on(t.tenantId, t.createdAt),
    check("refusals_reason_ck", sql`${t.reason} in ('rate_limited', 'budget_exhausted', 'unknown_model')`),
  ],
);

export const usageDaily = pgTable(
  "usage_daily",
  {
    tenantId: text("tenant_id").notNull(),
    /** UTC calendar day of the ledger row's created_at. */
    day: date("day", { mode: "string" }).notNull(),
    /** '' when the attempt had no user. */
    userId: text("user_id").notNull(),
    /** Upstream model (what prices are keyed by). */
    model: text("model").notNull(),
    attempts: integer("attempts").notNull().default(0),
    estimatedAttempts: integer("estimated_attempts").notNull().default(0),
    inputTokens: tokens("input_tokens"),
    outputTokens: tokens("output_tokens"),
    cacheReadTokens: tokens("cache_read_tokens"),
    cacheWriteTokens: tokens("cache_write_tokens"),
    reasoningTokens: tokens("reasoning_tokens"),
    costMicroUsd: micro("cost_micro_usd"),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.day, t.userId, t.model] })],
);

export const auditLog = pgTable(
  "audit_log",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    /** Tenant the action concerns; null for global actions (prices, tenant listing). */
    tenantId: text("tenant_id"),
    actor: text("actor").notNull(),
    action: text("action").notNull(),
    target: text("target"),
    /** Ids and counts only, never secrets (writers must not put them here). */
    details: jsonb("details").$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
  },
  (t) => [index("audit_log_tenant_idx").on(t.tenantId, t.id)],
);
