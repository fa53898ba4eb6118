import { createHttpSearchBackend, createRunEngine, type RunEngine, type RunEngineDeps } from "@byok/agent";
import type { Bus } from "@byok/bus";
import type { GatewayConfig } from "@byok/config";
import { createAddressGuardedFetch, createProviderAdapter } from "@byok/providers";
import { retryPolicy, type ProviderAdapter, type ProviderKind, type RetryPolicy } from "@byok/protocol";
import type { Store } from "@byok/store";
import { registerSecret, type GatewayMetrics, type Logger } from "@byok/telemetry";

const KINDS: ProviderKind[] = ["openai-responses", "openai-chat", "anthropic", "azure-openai", "bedrock-anthropic"];

/** One adapter per provider kind, as every service uses them (the engine and the compatible endpoints). */
export function providerAdapters(config: Pick<GatewayConfig, "allowPrivateBaseUrls">): (kind: ProviderKind) => ProviderAdapter {
  // Where private base URLs are refused, client-sent URLs are also checked at connect time.
  const deps = config.allowPrivateBaseUrls ? {} : { clientUrlFetch: createAddressGuardedFetch() };
  const adapters = Object.fromEntries(KINDS.map((k) => [k, createProviderAdapter(k, deps)])) as Record<ProviderKind, ProviderAdapter>;
  return (kind) => adapters[kind];
}

/**
 * The run engine as every service runs it (worker, embedded gateway): one adapter per
 * provider kind, the configured timers and web search, the tenancy hooks, secrets registered
 * for scrubbing.
 */
export function createServiceEngine(opts: {
  config: GatewayConfig;
  bus: Bus;
  store: Store;
  tenancy: Pick<RunEngineDeps, "resolveTargets" | "meter" | "content">;
  logger: Logger;
  metrics: GatewayMetrics;
  retry?: Partial<RetryPolicy>;
}): RunEngine {
  const { config } = opts;
  return createRunEngine({
    bus: opts.bus,
    store: opts.store,
    adapterFor: providerAdapters(config),
    ...opts.tenancy,
    retryPolicy: retryPolicy(opts.retry),
    // Every engine timer comes from the validated config (reconnect grace, presence checks, …).
    timers: config.timers,
    logger: opts.logger,
    registerSecret: (s) => registerSecret(s),
    metrics: opts.metrics,
    traceContent: (tenantId) => config.telemetry.traceContentTenants.includes(tenantId),
    ...(config.webSearchUrl ? { webSearch: createHttpSearchBackend({ url: config.webSearchUrl }) } : {}),
  });
}
