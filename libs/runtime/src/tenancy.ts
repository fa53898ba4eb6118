/**
 * The tenancy hooks of a process's run engine: the run meter, the content policy (retention,
 * ghost mode) and the per-tenant target resolver.
 */
import type { ContentPolicy, RunMeter, TargetResolution } from "@byok/agent";
import type { GatewayConfig } from "@byok/config";
import { createRunMeter, type BudgetGuard, type LedgerSpool, type RateLimiter } from "@byok/metering";
import { cacheTenantReads, type GatewayStore } from "@byok/store";
import type { GatewayMetrics, Logger } from "@byok/telemetry";
import { createStoreContentPolicy } from "./content-policy.js";
import { ledgerMetrics } from "./ledger-metrics.js";
import { createTenantTargetResolver, type RouteAsk } from "./routes.js";

/** The metering engine deps of a process: the run meter and the content policy. */
export function tenancyEngineDeps(opts: {
  store: GatewayStore;
  config: GatewayConfig;
  env: Record<string, string | undefined>;
  budgets: BudgetGuard;
  rates: RateLimiter;
  /** Ledger rows held during a database outage (docs/reliability.md); without it they are lost. */
  spool?: LedgerSpool;
  logger: Logger;
  /** The process's metrics: token and cost counters move with every ledger row written. */
  metrics?: GatewayMetrics;
}): { meter: RunMeter; content: ContentPolicy; resolveTargets: (run: RouteAsk, tenantId: string) => Promise<TargetResolution> } {
  const { config, logger } = opts;
  // The run meter (rate limits, budgets) and the content policy read the run's tenant: one
  // statement per tenant per GATEWAY_CONTENT_POLICY_CACHE_MS instead of one per read.
  const store: GatewayStore = { ...opts.store, tenants: cacheTenantReads(opts.store.tenants, config.timers.contentPolicyCacheMs) };
  return {
    meter: createRunMeter({
      store,
      budgets: opts.budgets,
      rates: opts.rates,
      ...(opts.metrics ? { onRecorded: ledgerMetrics(opts.metrics) } : {}),
      ...(opts.spool ? { spool: { spool: opts.spool, drainEveryMs: config.timers.ledgerSpoolDrainMs } } : {}),
      onSpool: (outcome, e) => {
        opts.metrics?.ledgerSpoolRows.inc({ outcome });
        const ids = { tenantId: e.tenantId, requestId: e.requestId, generation: e.generation, modelCallId: e.modelCallId, attempt: e.attempt };
        if (outcome === "held") logger.warn(ids, "the database is unreachable: the attempt's usage is held until it can be recorded");
        else if (outcome === "lost") logger.error(ids, "could not record the attempt's usage (the database is unreachable and the ledger spool is full or unreachable)");
        else logger.info(ids, "recorded an attempt's usage held during a database outage");
      },
      onError: (err, where, ref) => logger.error({ err: errorName(err), where, ...(ref ? { tenant: ref.tenantId, requestId: ref.requestId } : {}) }, "metering failed"),
    }),
    content: createStoreContentPolicy(store),
    resolveTargets: createTenantTargetResolver({
      store,
      env: opts.env,
      allowPrivateBaseUrls: config.allowPrivateBaseUrls,
      baseUrlAllowList: config.baseUrlAllowList,
      onError: (err) => logger.error({ err: errorName(err) }, "a stored provider credential could not be opened"),
    }),
  };
}

/** Error class/code only: store and KEK errors never carry secrets, but keep logs to the kind. */
function errorName(err: unknown): string {
  if (err instanceof Error) return "code" in err && typeof err.code === "string" ? `${err.name}:${err.code}` : err.name;
  return "unknown";
}
