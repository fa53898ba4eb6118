/**
 * LedgerRepository over drizzle. Rollups are maintained by the insert itself: in one
 * statement the ledger row is inserted (ON CONFLICT: a no-op, but for a takeover's
 * `interrupted` over an `ok`, see record()), and only if a new row was inserted is the
 * (tenant, day, user, model) rollup incremented. A repeated record() (a takeover
 * re-recording an attempt) therefore never changes the rollup.
 */
import { and, asc, eq, gte, lt, lte, sql, type SQL } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import { bind, columnList, columnName, driverValue, renderStatement, type Db, type RenderedStatement } from "../db.js";
import type { OpenedDatabase } from "../drivers/opened.js";
import { fencedError, fenceHolds } from "../fence.js";
import { refusals, usageDaily, usageLedger } from "../schema.js";
import type { CredentialsSource } from "@byok/protocol";
import type { AttemptOutcome, DailyOutcomes, DailyRefusals, DailyRequests, DailyUsage, LedgerEntry, LedgerRepository, LedgerRow, RefusalReason } from "./types.js";

/** The ledger row's columns a record writes, named as the entry's fields (created_at: the server's now, or `at`). */
const LEDGER_FIELDS = [
  "tenantId", "userId", "keyId", "conversationId", "requestId", "originalRequestId", "generation", "modelCallId", "attempt",
  "provider", "upstreamModel", "route", "credentialsSource", "rawUsage", "inputTokens", "outputTokens", "cacheReadTokens",
  "cacheWriteTokens", "reasoningTokens", "estimated", "priceVersion", "costMicroUsd", "ttftMs", "ttftOverheadUs", "durationMs", "outcome",
] as const satisfies readonly (keyof LedgerEntry & keyof typeof usageLedger.$inferInsert)[];

/** The rollup sums a new ledger row adds, as the entry's values. */
const DAILY_SUMS: readonly [AnyPgColumn, (e: LedgerEntry) => number][] = [
  [usageDaily.attempts, () => 1],
  [usageDaily.estimatedAttempts, (e) => (e.estimated ? 1 : 0)],
  [usageDaily.inputTokens, (e) => e.inputTokens],
  [usageDaily.outputTokens, (e) => e.outputTokens],
  [usageDaily.cacheReadTokens, (e) => e.cacheReadTokens],
  [usageDaily.cacheWriteTokens, (e) => e.cacheWriteTokens],
  [usageDaily.reasoningTokens, (e) => e.reasoningTokens],
  [usageDaily.costMicroUsd, (e) => e.costMicroUsd],
];

/**
 * The record statement, rendered once per shape (fenced or not, an explicit `at` or the
 * server's now): the fence check, the ledger row and its rollup as data-modifying CTEs. The
 * rollup row is only added to when the ledger row was new (xmax = 0): updated (a takeover's
 * `interrupted` over an `ok`, see record()) or untouched, the rollup already counts this
 * attempt. On conflict: a takeover marks the cut attempt interrupted; when the dead owner had
 * already recorded it ok (the attempt ended just before the owner died, and the pass is run
 * again), its output was superseded: the row becomes interrupted, usage unchanged, so a model
 * call has exactly one ok. Any other repeat is a no-op.
 */
function recordStatement(fenced: boolean, at: boolean): RenderedStatement {
  return renderStatement((value) => {
    const fence = fenced ? fenceHolds(value("tenantId"), { requestId: value("requestId"), generation: value("generation"), epoch: value("epoch") }) : sql`true`;
    const row: AnyPgColumn[] = [...LEDGER_FIELDS.map((f) => usageLedger[f]), ...(at ? [usageLedger.createdAt] : [])];
    const typed = (col: AnyPgColumn, v: SQL) => sql`${v}::${sql.raw(col.getSQLType())}`;
    const ledgerKey = columnList([usageLedger.tenantId, usageLedger.requestId, usageLedger.generation, usageLedger.modelCallId, usageLedger.attempt]);
    const dailyKey = columnList([usageDaily.tenantId, usageDaily.day, usageDaily.userId, usageDaily.model]);
    return sql`
      with fence as (select ${fence} as holds),
      ins as (
        insert into ${usageLedger} (${columnList(row)})
        select ${sql.join(row.map((c) => typed(c, value(`row:${c.name}`))), sql`, `)} from fence where fence.holds
        on conflict (${ledgerKey}) do update set ${columnName(usageLedger.outcome)} = 'interrupted'
          where ${usageLedger}.${columnName(usageLedger.outcome)} = 'ok' and excluded.${columnName(usageLedger.outcome)} = 'interrupted'
        returning ${columnName(usageLedger.createdAt)} as created_at, (xmax = 0) as inserted
      ),
      rollup as (
        insert into ${usageDaily} (${columnList([usageDaily.tenantId, usageDaily.day, usageDaily.userId, usageDaily.model, ...DAILY_SUMS.map(([c]) => c)])})
        select ${value("tenantId")}::text, (created_at at time zone 'UTC')::date, ${value("userId")}::text, ${value("upstreamModel")}::text,
          ${sql.join(DAILY_SUMS.map(([c]) => typed(c, value(`sum:${c.name}`))), sql`, `)}
        from ins where inserted
        on conflict (${dailyKey}) do update set ${sql.join(DAILY_SUMS.map(([c]) => sql`${columnName(c)} = ${usageDaily}.${columnName(c)} + excluded.${columnName(c)}`), sql`, `)}
      )
      select (select holds from fence) as holds, coalesce((select inserted from ins), false) as inserted`;
  });
}

/** The record statement of each shape, rendered once: fenced (by the entry's epoch) or not, at an explicit time or the server's now. */
const RECORD_STATEMENTS = {
  fenced: { at: recordStatement(true, true), now: recordStatement(true, false) },
  unfenced: { at: recordStatement(false, true), now: recordStatement(false, false) },
};

export function createLedgerRepository(db: Db, query: OpenedDatabase["query"]): LedgerRepository {
  return {
    async record(e, at) {
      // One statement (one round trip, atomic by itself), rendered once per shape.
      const values: Record<string, unknown> = { tenantId: e.tenantId, userId: e.userId ?? "", upstreamModel: e.upstreamModel };
      if (e.epoch !== undefined) Object.assign(values, { requestId: e.requestId, generation: e.generation, epoch: e.epoch });
      for (const f of LEDGER_FIELDS) values[`row:${usageLedger[f].name}`] = driverValue(usageLedger[f], e[f]);
      if (at !== undefined) values[`row:${usageLedger.createdAt.name}`] = driverValue(usageLedger.createdAt, at);
      for (const [c, of] of DAILY_SUMS) values[`sum:${c.name}`] = driverValue(c, of(e));
      const statement = RECORD_STATEMENTS[e.epoch === undefined ? "unfenced" : "fenced"][at === undefined ? "now" : "at"];
      const [out] = (await query(statement.text, bind(statement, values))).rows as { holds: boolean; inserted: boolean }[];
      if (e.epoch !== undefined && out?.holds !== true) throw fencedError({ requestId: e.requestId, generation: e.generation, epoch: e.epoch });
      return { inserted: out?.inserted === true };
    },

    async forRequest(tenantId, requestId) {
      const rows = await db
        .select()
        .from(usageLedger)
        .where(and(eq(usageLedger.tenantId, tenantId), eq(usageLedger.requestId, requestId)))
        .orderBy(asc(usageLedger.generation), asc(usageLedger.modelCallId), asc(usageLedger.attempt));
      return rows.map(toLedgerRow);
    },

    async daily(tenantId, q = {}) {
      const filters = [eq(usageDaily.tenantId, tenantId)];
      if (q.from !== undefined) filters.push(gte(usageDaily.day, q.from));
      if (q.to !== undefined) filters.push(lte(usageDaily.day, q.to));
      if (q.userId !== undefined) filters.push(eq(usageDaily.userId, q.userId));
      if (q.model !== undefined) filters.push(eq(usageDaily.model, q.model));
      const rows = await db
        .select()
        .from(usageDaily)
        .where(and(...filters))
        .orderBy(asc(usageDaily.day), asc(usageDaily.userId), asc(usageDaily.model));
      return rows.map(
        (r): DailyUsage => ({
          tenantId: r.tenantId,
          day: r.day,
          userId: r.userId === "" ? undefined : r.userId,
          model: r.model,
          attempts: r.attempts,
          estimatedAttempts: r.estimatedAttempts,
          inputTokens: r.inputTokens,
          outputTokens: r.outputTokens,
          cacheReadTokens: r.cacheReadTokens,
          cacheWriteTokens: r.cacheWriteTokens,
          reasoningTokens: r.reasoningTokens,
          costMicroUsd: r.costMicroUsd,
        }),
      );
    },

    async dailyOutcomes(tenantId, q = {}) {
      const day = utcDayOf(usageLedger.createdAt);
      const filters = [eq(usageLedger.tenantId, tenantId), ...createdWithin(usageLedger.createdAt, q)];
      if (q.userId !== undefined) filters.push(eq(usageLedger.userId, q.userId));
      if (q.model !== undefined) filters.push(eq(usageLedger.upstreamModel, q.model));
      const n = (outcome: AttemptOutcome) => sql<string>`count(*) filter (where ${usageLedger.outcome} = ${outcome})`;
      const rows = await db
        .select({
          day,
          attempts: sql<string>`count(*)`,
          ok: n("ok"),
          failed: n("failed"),
          retried: n("retried"),
          cancelled: n("cancelled"),
          interrupted: n("interrupted"),
          ttftAvg: sql<string | null>`avg(${usageLedger.ttftMs})`,
          ttftP95: sql<string | null>`percentile_cont(0.95) within group (order by ${usageLedger.ttftMs})`,
          overheadN: sql<string>`count(${usageLedger.ttftOverheadUs})`,
          overheadAvg: sql<string | null>`avg(${usageLedger.ttftOverheadUs})`,
          overheadP95: sql<string | null>`percentile_cont(0.95) within group (order by ${usageLedger.ttftOverheadUs})`,
        })
        .from(usageLedger)
        .where(and(...filters))
        .groupBy(day)
        .orderBy(day);
      const num = (v: string | null) => (v === null ? undefined : Math.round(Number(v)));
      return rows.map(
        (r): DailyOutcomes => ({
          tenantId,
          day: r.day,
          attempts: Number(r.attempts),
          ok: Number(r.ok),
          failed: Number(r.failed),
          retried: Number(r.retried),
          cancelled: Number(r.cancelled),
          interrupted: Number(r.interrupted),
          ttftAvgMs: num(r.ttftAvg),
          ttftP95Ms: num(r.ttftP95),
          overheadAttempts: Number(r.overheadN),
          overheadAvgUs: num(r.overheadAvg),
          overheadP95Us: num(r.overheadP95),
        }),
      );
    },

    async recordRefusal(r, at) {
      const rows = await db
        .insert(refusals)
        .values({ tenantId: r.tenantId, userId: r.userId ?? null, keyId: r.keyId ?? null, requestId: r.requestId, route: r.route ?? null, reason: r.reason, ...(at ? { createdAt: at } : {}) })
        .onConflictDoNothing()
        .returning({ id: refusals.id });
      return { inserted: rows.length > 0 };
    },

    async dailyRefusals(tenantId, q = {}) {
      const day = utcDayOf(refusals.createdAt);
      const filters = [eq(refusals.tenantId, tenantId), ...createdWithin(refusals.createdAt, q)];
      if (q.userId !== undefined) filters.push(eq(refusals.userId, q.userId));
      if (q.model !== undefined) filters.push(eq(refusals.route, q.model));
      const n = (reason: RefusalReason) => sql<string>`count(*) filter (where ${refusals.reason} = ${reason})`;
      const rows = await db
        .select({ day, rateLimited: n("rate_limited"), budgetExhausted: n("budget_exhausted"), unknownModel: n("unknown_model") })
        .from(refusals)
        .where(and(...filters))
        .groupBy(day)
        .orderBy(day);
      return rows.map((r): DailyRefusals => ({ tenantId, day: r.day, rateLimited: Number(r.rateLimited), budgetExhausted: Number(r.budgetExhausted), unknownModel: Number(r.unknownModel) }));
    },

    async dailyRequests(tenantId, q = {}) {
      const attempts = [eq(usageLedger.tenantId, tenantId), ...createdWithin(usageLedger.createdAt, q)];
      const refused = [eq(refusals.tenantId, tenantId), ...createdWithin(refusals.createdAt, q)];
      if (q.userId !== undefined) {
        attempts.push(eq(usageLedger.userId, q.userId));
        refused.push(eq(refusals.userId, q.userId));
      }
      if (q.model !== undefined) {
        attempts.push(eq(usageLedger.upstreamModel, q.model));
        refused.push(eq(refusals.route, q.model));
      }
      // Every (day, request) seen in either table, flagged when a refusal row has it; then per day.
      const seen = db
        .select({ day: utcDayOf(usageLedger.createdAt).as("day"), requestId: usageLedger.requestId, refused: sql<boolean>`false`.as("refused") })
        .from(usageLedger)
        .where(and(...attempts))
        .unionAll(
          db
            .select({ day: utcDayOf(refusals.createdAt).as("day"), requestId: refusals.requestId, refused: sql<boolean>`true`.as("refused") })
            .from(refusals)
            .where(and(...refused)),
        )
        .as("seen");
      const rows = await db
        .select({
          day: seen.day,
          requests: sql<string>`count(distinct ${seen.requestId})`,
          refused: sql<string>`count(distinct ${seen.requestId}) filter (where ${seen.refused})`,
        })
        .from(seen)
        .groupBy(seen.day)
        .orderBy(seen.day);
      return rows.map((r): DailyRequests => ({ tenantId, day: r.day, requests: Number(r.requests), refused: Number(r.refused) }));
    },

    async monthTotals(tenantId, monthOf, userId) {
      const start = new Date(Date.UTC(monthOf.getUTCFullYear(), monthOf.getUTCMonth(), 1));
      const end = new Date(Date.UTC(monthOf.getUTCFullYear(), monthOf.getUTCMonth() + 1, 1));
      const filters = [eq(usageDaily.tenantId, tenantId), gte(usageDaily.day, utcDay(start)), lt(usageDaily.day, utcDay(end))];
      if (userId !== undefined) filters.push(eq(usageDaily.userId, userId));
      const [row] = await db
        .select({
          cost: sql<string>`coalesce(sum(${usageDaily.costMicroUsd}), 0)`,
          tokens: sql<string>`coalesce(sum(${usageDaily.inputTokens} + ${usageDaily.outputTokens} + ${usageDaily.cacheReadTokens} + ${usageDaily.cacheWriteTokens}), 0)`,
        })
        .from(usageDaily)
        .where(and(...filters));
      return { costMicroUsd: Number(row?.cost ?? 0), tokens: Number(row?.tokens ?? 0) };
    },
  };
}

/** The UTC day (YYYY-MM-DD) of a timestamp column, in SQL. */
function utcDayOf(createdAt: AnyPgColumn) {
  return sql<string>`to_char(${createdAt} at time zone 'UTC', 'YYYY-MM-DD')`;
}

/** A timestamp column within the query's UTC days, `from` and `to` both included. */
function createdWithin(createdAt: AnyPgColumn, q: { from?: string | undefined; to?: string | undefined }) {
  const filters = [];
  if (q.from !== undefined) filters.push(gte(createdAt, new Date(`${q.from}T00:00:00Z`)));
  if (q.to !== undefined) filters.push(lt(createdAt, new Date(Date.parse(`${q.to}T00:00:00Z`) + 86_400_000)));
  return filters;
}

/** YYYY-MM-DD of the UTC calendar day. */
export function utcDay(d: Date): string {
  return d.toISOString().slice(0, 10);
}

function toLedgerRow(r: typeof usageLedger.$inferSelect): LedgerRow {
  return {
    tenantId: r.tenantId,
    userId: r.userId ?? undefined,
    keyId: r.keyId ?? undefined,
    conversationId: r.conversationId,
    requestId: r.requestId,
    originalRequestId: r.originalRequestId ?? undefined,
    generation: r.generation,
    modelCallId: r.modelCallId,
    attempt: r.attempt,
    provider: r.provider,
    upstreamModel: r.upstreamModel,
    route: r.route,
    credentialsSource: r.credentialsSource as CredentialsSource,
    rawUsage: r.rawUsage ?? undefined,
    inputTokens: r.inputTokens,
    outputTokens: r.outputTokens,
    cacheReadTokens: r.cacheReadTokens,
    cacheWriteTokens: r.cacheWriteTokens,
    reasoningTokens: r.reasoningTokens,
    estimated: r.estimated,
    priceVersion: r.priceVersion ?? undefined,
    costMicroUsd: r.costMicroUsd,
    ttftMs: r.ttftMs ?? undefined,
    ttftOverheadUs: r.ttftOverheadUs ?? undefined,
    durationMs: r.durationMs,
    outcome: r.outcome as AttemptOutcome,
    createdAt: r.createdAt,
  };
}
