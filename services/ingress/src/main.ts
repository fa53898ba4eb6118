import { ConfigError, loadConfig } from "@byok/config";
import { createStore } from "@byok/store";
import { AuthConfigError, authenticatorFromConfig } from "./auth/index.js";
import { startIngressService } from "./service.js";
import { startServiceTracing } from "@byok/telemetry";
import { createControlPlane, tokenKeysFor } from "@byok/control-plane";

// An ingress replica (distributed mode): `tsx services/ingress/src/main.ts`.
// Gateway authentication from GATEWAY_AUTH_MODE: api_key (default; keys verified against the
// store) or trusted_header; open mode is refused in distributed mode.
try {
  const tracing = startServiceTracing("ingress", process.env);
  const config = loadConfig(process.env, { mode: "distributed" });
  const store = await createStore(
    config.store.driver === "postgres"
      ? { driver: "postgres", url: config.store.url, ...(config.store.schema ? { schema: config.store.schema } : {}), maxConnections: 4 }
      : { driver: "pglite", ...(config.store.dataDir ? { dataDir: config.store.dataDir } : {}) },
  );
  const auth = authenticatorFromConfig(config, { keys: store.apiKeys, tenantExists: async (id) => (await store.tenants.get(id)) !== undefined });
  const tokenKeys = await tokenKeysFor(config, undefined);
  const svc = await startIngressService(config, {
    controlPlane: ({ metrics, logger }) => createControlPlane({ config, store, baseAuth: auth, tokenKeys, metrics, logger }),
    ...(process.env.GATEWAY_NAME ? { name: process.env.GATEWAY_NAME } : {}),
  });
  svc.logger.info({ url: svc.url, name: svc.name }, "ingress started");
  // One machine-readable line for scripts and tests.
  console.log(`BYOK_READY ingress ${svc.url} ${svc.name}`);
  let stopping = false;
  const stop = async (drain: boolean) => {
    if (stopping) return;
    stopping = true;
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
