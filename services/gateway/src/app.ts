import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createInProcessDispatcher, createRunEngine, createTargetResolver } from "@byok/agent";
import { createMemoryBus, type Bus } from "@byok/bus";
import type { GatewayConfig } from "@byok/config";
import { createIngressHandler, createOpenAuthenticator } from "@byok/ingress";
import { retryPolicy, type ProviderAdapter, type ProviderKind, type RetryPolicy } from "@byok/providers";
import { createStore, type Store } from "@byok/store";
import { createLogger, createMetrics, registerSecret, type Logger } from "@byok/telemetry";
import { createProviderAdapters } from "./adapters.js";

export interface EmbeddedGateway {
  /** Base URL the gateway listens on, e.g. http://127.0.0.1:8787 */
  url: string;
  server: Server;
  bus: Bus;
  store: Store;
  logger: Logger;
  close(): Promise<void>;
}

export interface EmbeddedOptions {
  logger?: Logger;
  /** Overrides of the provider retry policy (tests shorten the backoff). */
  retry?: Partial<RetryPolicy>;
  env?: Record<string, string | undefined>;
}

/**
 * Embedded mode: ingress + run engine in one process, in-memory bus, PGlite (or the
 * configured Postgres). What `npm start` runs.
 */
export async function startEmbeddedGateway(config: GatewayConfig, opts: EmbeddedOptions = {}): Promise<EmbeddedGateway> {
  const logger = opts.logger ?? createLogger({ service: "gateway", level: config.logLevel });
  const metrics = createMetrics();
  const store = await createStore(
    config.store.driver === "pglite"
      ? { driver: "pglite", ...(config.store.dataDir ? { dataDir: config.store.dataDir } : {}) }
      : { driver: "postgres", url: config.store.url },
  );
  const bus = createMemoryBus({
    seqnoWindow: config.limits.seqnoWindow,
    maxOutputFrames: config.limits.maxOutputFrames,
    maxInputEntries: config.limits.maxInputEntries,
    finishedRetentionMs: config.timers.finishedRetentionMs,
    sequenceStateTtlMs: config.timers.sequenceStateTtlMs,
  });
  const adapters = createProviderAdapters();
  const engine = createRunEngine({
    bus,
    store,
    adapterFor: (kind: ProviderKind): ProviderAdapter => adapters[kind],
    resolveTargets: createTargetResolver({
      routes: config.file.routes,
      env: opts.env ?? process.env,
      allowPrivateBaseUrls: config.allowPrivateBaseUrls,
      baseUrlAllowList: config.baseUrlAllowList,
    }),
    retryPolicy: retryPolicy(opts.retry),
    timers: config.timers,
    logger,
    registerSecret: (s) => registerSecret(s),
  });
  const dispatcher = createInProcessDispatcher(engine, logger);
  const handler = createIngressHandler({
    bus,
    dispatcher,
    auth: createOpenAuthenticator(config.defaultTenant),
    timers: config.timers,
    limits: config.limits,
    logger,
    metrics,
    ready: async () => {
      await store.migrations();
    },
  });
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    server,
    bus,
    store,
    logger,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await dispatcher.close();
      await bus.close();
      await store.close();
    },
  };
}
