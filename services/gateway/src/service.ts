import type { Server } from "node:http";
import { dirname, resolve } from "node:path";
import { createAdminHandler } from "@byok/admin-api";
import { createInProcessDispatcher } from "@byok/agent";
import { createDashboardHandler } from "@byok/dashboard";
import { createMemoryBus, type Bus, type BusOptions } from "@byok/bus";
import { busOptionsOf, type GatewayConfig } from "@byok/config";
import { createControlPlane, tokenKeysFor } from "@byok/control-plane";
import { authenticatorFromConfig, createConnectionRefusal, OpenStreams } from "@byok/edge";
import { createMemoryLedgerSpool, type BudgetGuard, type RateLimiter } from "@byok/metering";
import type { RetryPolicy } from "@byok/protocol";
import { kekFor, listenEdge, openGatewayStore } from "@byok/process";
import { closeMetering, createServiceCompat, createServiceEngine, memoryMetering, prepareDefaultTenant, tenancyEngineDeps } from "@byok/runtime";
import type { GatewayStore } from "@byok/store";
import { createLogger, createMetrics, type Logger } from "@byok/telemetry";
import { ADMIN_PATH_PREFIX, createGatewayHandler } from "./handler.js";

export interface GatewayService {
  /** Base URL the gateway listens on, e.g. http://127.0.0.1:8787 */
  url: string;
  server: Server;
  bus: Bus;
  store: GatewayStore;
  logger: Logger;
  /** Admin API base URL (`<url>/admin`), when GATEWAY_ADMIN_KEY is set. */
  adminUrl: string | undefined;
  close(): Promise<void>;
}

export interface GatewayServiceOptions {
  logger?: Logger;
  /** Overrides of the provider retry policy (tests shorten the backoff). */
  retry?: Partial<RetryPolicy>;
  env?: Record<string, string | undefined>;
  /**
   * The request bus (default: in memory). Tests pass a Redis bus to run the same scenarios on
   * distributed mode's bus; the gateway then owns and closes it.
   */
  bus?: (options: BusOptions) => Bus;
  /** Budget guard / rate limiter (default: in memory). Tests share a Redis one across gateways. */
  budgets?: BudgetGuard;
  rates?: RateLimiter;
}

/**
 * Embedded mode: ingress + run engine in one process, in-memory bus, PGlite (or the
 * configured Postgres). What `npm start` runs.
 */
export async function startGatewayService(config: GatewayConfig, opts: GatewayServiceOptions = {}): Promise<GatewayService> {
  const logger = opts.logger ?? createLogger({ service: "gateway", level: config.logLevel });
  const metrics = createMetrics(config.telemetry);
  // KEK: GATEWAY_KEK when set; else generated once (0600) next to the PGlite data dir (the
  // standalone admin CLI finds it there too); an in-memory store gets a throw-away key.
  // Generated keys (KEK, token signing) live next to the PGlite data dir; an in-memory store gets throw-away ones.
  const keyDir =
    config.store.driver === "pglite" ? (config.store.dataDir ? { dataDir: dirname(config.store.dataDir) } : ("ephemeral" as const)) : { dataDir: resolve(".data") };
  const kek = await kekFor(config, keyDir);
  const store = await openGatewayStore(config, kek, { apiKeyCacheMs: config.timers.apiKeyCacheMs, routeCacheMs: config.timers.routeCacheMs });
  const env = opts.env ?? process.env;
  let closeOwnMetering = async () => {};
  try {
    await prepareDefaultTenant(store, config);
  } catch (err) {
    await store.close();
    throw err;
  }
  const spoolMaxRows = config.limits.ledgerSpoolMaxRows;
  const metering =
    opts.budgets && opts.rates
      ? { budgets: opts.budgets, rates: opts.rates, spool: createMemoryLedgerSpool({ maxRows: spoolMaxRows }) }
      : memoryMetering(store, config.timers.budgetLeaseTtlMs, spoolMaxRows);
  if (!opts.budgets || !opts.rates) closeOwnMetering = () => closeMetering(metering);
  else closeOwnMetering = () => metering.spool.close();
  const tenancy = tenancyEngineDeps({ store, config, env, ...metering, logger, metrics });
  const bus = (opts.bus ?? createMemoryBus)(busOptionsOf(config));
  const engine = createServiceEngine({ config, bus, store, tenancy, logger, metrics, ...(opts.retry ? { retry: opts.retry } : {}) });

  const dispatcher = createInProcessDispatcher(engine, bus, logger, {
    dedupeWindowMs: config.timers.dispatchDedupeMs,
    concurrency: config.distributed.workerConcurrency,
    maxWaitingRuns: config.distributed.maxWaitingRuns,
  });
  metrics.queueDepthFrom(async () => ({ ...dispatcher.counts(), delayed: 0, prioritized: 0 }));
  const controlPlane = createControlPlane({
    config,
    store,
    baseAuth: authenticatorFromConfig(config, { keys: store.apiKeys, tenantExists: async (id) => (await store.tenants.get(id)) !== undefined }),
    tokenKeys: await tokenKeysFor(config, keyDir),
    metrics,
    logger,
  });
  // OpenAI- and Anthropic-compatible endpoints on the same routes, meter and retry policy.
  const compat = createServiceCompat({ config, auth: controlPlane.auth, tenancy, logger, metrics, ...(opts.retry ? { retry: opts.retry } : {}) });
  const admin = config.adminKey
    ? createAdminHandler({
        store,
        adminKey: config.adminKey,
        onError: (err) => logger.error({ err: err instanceof Error ? err.name : "unknown" }, "admin API error"),
        onAnswered: (route, status) => metrics.adminRequests.inc({ route, status: String(status) }),
      })
    : undefined;
  // HTTP/1.1 and HTTP/2 (h2 over TLS when configured, else h2c) on one port.
  const edge = await listenEdge(
    createGatewayHandler({
      bus,
      dispatcher,
      controlPlane,
      auth: controlPlane.auth,
      timers: config.timers,
      limits: config.limits,
      logger,
      metrics,
      ready: async () => {
        await store.migrations();
      },
      streams: new OpenStreams(config.limits.maxRunSseStreams),
      admin,
      // The usage dashboard reads the admin API under /admin: served only when that API is.
      dashboard: admin ? createDashboardHandler({ adminApiBase: ADMIN_PATH_PREFIX }) : undefined,
      compat,
    }),
    {
      host: config.host,
      port: config.port,
      tls: config.controlPlane.tls,
      backlog: config.limits.listenBacklog,
      sockets: config.limits.listenSockets,
      connections: { max: config.limits.maxConnections, refuse: createConnectionRefusal(config.limits.maxConnections), metrics },
    },
  );
  const server: Server = edge.http1;
  const url = edge.url;
  return {
    url,
    adminUrl: admin ? `${url}${ADMIN_PATH_PREFIX}` : undefined,
    server: edge.http1,
    bus,
    store,
    logger,
    async close() {
      await edge.close();
      await dispatcher.close();
      await bus.close();
      await closeOwnMetering();
      await store.close();
    },
  };
}
