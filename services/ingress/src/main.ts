import { ConfigError, loadConfig } from "@byok/config";
import { AuthConfigError, authenticatorFromConfig } from "@byok/edge";
import { exitIfStopStalls, kekFor, openGatewayStore } from "@byok/process";
import { createServiceCompat, meteringFor, tenancyEngineDeps } from "@byok/runtime";
import { startServiceTracing } from "@byok/telemetry";
import { createControlPlane, tokenKeysFor } from "@byok/control-plane";
import { startIngressService } from "./service.js";

// An ingress replica (distributed mode): `tsx services/ingress/src/main.ts`.
// Gateway authentication from GATEWAY_AUTH_MODE: api_key (default; keys verified against the
// store) or trusted_header; open mode is refused in distributed mode.
try {
  const config = loadConfig(process.env, { mode: "distributed" });
  const tracing = startServiceTracing("ingress", config.telemetry);
  // A small pool: the ingress looks up gateway keys, and for the compatible endpoints (which it
  // serves itself, docs/compat.md) routes and their credentials (opened with GATEWAY_KEK when set).
  const store = await openGatewayStore(config, await kekFor(config, undefined), { maxConnections: 4, apiKeyCacheMs: config.timers.apiKeyCacheMs, routeCacheMs: config.timers.routeCacheMs });
  const auth = authenticatorFromConfig(config, { keys: store.apiKeys, tenantExists: async (id) => (await store.tenants.get(id)) !== undefined });
  const tokenKeys = await tokenKeysFor(config, undefined);
  const svc = await startIngressService(config, {
    controlPlane: ({ metrics, logger }) => createControlPlane({ config, store, baseAuth: auth, tokenKeys, metrics, logger }),
    // Budgets and rate limits on the same Redis as the workers', so limits hold across both.
    compat: ({ auth: edgeAuth, logger, metrics }) =>
      createServiceCompat({ config, auth: edgeAuth, tenancy: tenancyEngineDeps({ store, config, env: process.env, ...meteringFor(config, store), logger, metrics }), logger, metrics }),
    ...(config.name ? { name: config.name } : {}),
  });
  svc.logger.info({ url: svc.url, name: svc.name }, "ingress started");
  // One machine-readable line for scripts and tests.
  console.log(`BYOK_READY ingress ${svc.url} ${svc.name}`);
  let stopping = false;
  const stop = async (drain: boolean) => {
    if (stopping) return;
    stopping = true;
    exitIfStopStalls((drain ? config.timers.drainGraceMs : 0) + config.timers.shutdownTimeoutMs, (m) => svc.logger.error(m));
    // SIGTERM (every Kubernetes rollout) drains; SIGINT stops at once.
    if (drain) await svc.drain();
    else await svc.close();
    await store.close();
    await tracing.shutdown();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop(false));
  process.once("SIGTERM", () => void stop(true));
} catch (err) {
  if (err instanceof ConfigError || err instanceof AuthConfigError) {
    console.error(`configuration error: ${err.message}`);
    process.exit(2);
  }
  throw err;
}
