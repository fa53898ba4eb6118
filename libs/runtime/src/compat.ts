import type { RunMeter, TargetResolution } from "@byok/agent";
import type { GatewayConfig } from "@byok/config";
import { createCompatHandler, type CompatAuthenticator, type CompatHandler } from "@byok/compat";
import { retryPolicy, type RetryPolicy } from "@byok/protocol";
import type { GatewayMetrics, Logger } from "@byok/telemetry";
import { providerAdapters } from "./engine.js";
import type { RouteAsk } from "./routes.js";

/**
 * The OpenAI- and Anthropic-compatible endpoints of a process (embedded gateway, ingress): the
 * same per-tenant routes, run meter, adapters and retry policy as the run engine, and the
 * edge's authenticator. They carry no client credentials: a model needs a route.
 */
export function createServiceCompat(opts: {
  config: GatewayConfig;
  auth: CompatAuthenticator;
  tenancy: { meter: RunMeter; resolveTargets: (run: RouteAsk, tenantId: string) => Promise<TargetResolution> };
  logger: Logger;
  metrics: GatewayMetrics;
  retry?: Partial<RetryPolicy>;
}): CompatHandler {
  const { config, tenancy } = opts;
  return createCompatHandler({
    auth: opts.auth,
    resolveTargets: (modelId, tenantId) => tenancy.resolveTargets({ modelId, credentials: undefined, parameters: [], maxMode: false }, tenantId),
    adapterFor: providerAdapters(config),
    meter: tenancy.meter,
    retryPolicy: retryPolicy(opts.retry),
    logger: opts.logger,
    metrics: opts.metrics,
    maxBodyBytes: config.limits.maxPayloadBytes,
  });
}
