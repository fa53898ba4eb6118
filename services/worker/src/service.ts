import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { Bus } from "@byok/bus";
import { redisTargetOf, type GatewayConfig } from "@byok/config";
import type { RetryPolicy } from "@byok/protocol";
import { closeServer, kekFor, listen, openGatewayStore, openRedisBus } from "@byok/process";
import { closeMetering, createRunWorker, createServiceEngine, meteringFor, prepareDefaultTenant, tenancyEngineDeps, type RunWorker } from "@byok/runtime";
import type { Store } from "@byok/store";
import { createLogger, createMetrics, type Logger } from "@byok/telemetry";
import { createWorkerHandler } from "./handler.js";

export interface WorkerService {
  /** Health/metrics endpoint (GET /healthz, /readyz, /metrics). */
  url: string;
  /** Client name of this process's Redis connections. */
  name: string;
  runWorker: RunWorker;
  bus: Bus;
  store: Store;
  logger: Logger;
  /** Graceful: hands running generations back to the queue, then closes every connection. */
  close(): Promise<void>;
}

export interface WorkerServiceOptions {
  logger?: Logger;
  /** Overrides of the provider retry policy. */
  retry?: Partial<RetryPolicy>;
  env?: Record<string, string | undefined>;
  /** Client name prefix of the Redis connections (default `byok-worker-<random>`). */
  name?: string;
}

/**
 * A provider worker process (distributed mode): Redis bus + PostgreSQL store + run engine,
 * fed by the BullMQ run queue. Health and metrics on config.host:config.port.
 */
export async function startWorkerService(config: GatewayConfig, opts: WorkerServiceOptions = {}): Promise<WorkerService> {
  const logger = opts.logger ?? createLogger({ service: "worker", level: config.logLevel });
  const name = opts.name ?? `byok-worker-${randomUUID().slice(0, 8)}`;
  const metrics = createMetrics(config.telemetry);
  const redis = redisTargetOf(config);
  const d = config.distributed;
  // Tenancy (issue 6): the KEK from GATEWAY_KEK (no KEK: stored credentials stay sealed and
  // their targets are skipped), the file's routes applied to the default tenant, and the meter
  // on Redis (budgets and rate limits shared by every replica; in memory without REDIS_URL).
  const store = await openGatewayStore(config, await kekFor(config, undefined), { routeCacheMs: config.timers.routeCacheMs });
  await prepareDefaultTenant(store, config);
  const metering = meteringFor(config, store);
  const tenancy = tenancyEngineDeps({ store, config, env: opts.env ?? process.env, ...metering, logger, metrics });
  const bus = openRedisBus(config, name, logger);
  metrics.watchDependency("redis", () => bus.latestGeneration({ tenantId: config.defaultTenant, requestId: "__readyz__" }));
  metrics.watchDependency("postgres", () => store.migrations());
  const engine = createServiceEngine({ config, bus, store, tenancy, logger, metrics, ...(opts.retry ? { retry: opts.retry } : {}) });

  const runWorker = createRunWorker(
    {
      redis,
      name: d.queueName,
      prefix: d.queuePrefix,
      concurrency: d.workerConcurrency,
      lockDurationMs: d.lockDurationMs,
      stalledIntervalMs: d.stalledIntervalMs,
      deadWorkerCheckMs: d.deadWorkerCheckMs,
      maxStalledCount: d.maxStalledCount,
      connectionName: name,
    },
    { engine, bus, logger, metrics },
  );
  await runWorker.ready();
  metrics.queueDepthFrom(() => runWorker.counts());

  const server: Server = createServer(createWorkerHandler({ metrics, logger, runWorker }));
  const url = await listen(server, config.host, config.port);
  let closing: Promise<void> | undefined;
  return {
    url,
    name,
    runWorker,
    bus,
    store,
    logger,
    close() {
      closing ??= (async () => {
        await runWorker.close();
        await closeServer(server);
        await bus.close();
        await closeMetering(metering);
        await store.close();
      })();
      return closing;
    },
  };
}
