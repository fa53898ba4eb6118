/**
 * Token and cost metrics counted from the usage ledger's own rows, so `byok_tokens_total` and
 * `byok_cost_usd_total` say exactly what the ledger holds (one count per recorded attempt,
 * agent runs and compatible endpoints alike; docs/observability.md).
 */
import type { LedgerEntry } from "@byok/store";
import type { GatewayMetrics, TokenKind } from "@byok/telemetry";

export function ledgerMetrics(metrics: GatewayMetrics): (entry: LedgerEntry) => void {
  return (e) => {
    const tenant = metrics.tenantLabels(e.tenantId);
    const kinds: [TokenKind, number][] = [
      ["input", e.inputTokens],
      ["output", e.outputTokens],
      ["cache_read", e.cacheReadTokens],
      ["cache_write", e.cacheWriteTokens],
      ["reasoning", e.reasoningTokens],
    ];
    for (const [kind, n] of kinds) if (n > 0) metrics.tokens.inc({ provider: e.provider, kind, ...tenant }, n);
    if (e.costMicroUsd > 0) metrics.cost.inc({ provider: e.provider, gen_ai_request_model: metrics.modelLabel(e.upstreamModel), ...tenant }, e.costMicroUsd / 1e6);
  };
}
