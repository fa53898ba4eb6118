import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRedisBus, type Bus } from "@byok/bus";
import type { GatewayConfig } from "@byok/config";
import type { RetryPolicy } from "@byok/providers";
import type { Store } from "@byok/store";
import { createLogger, createMetrics, metricsHandler, type Logger } from "@byok/telemetry";
import { createServiceEngine } from "./engine.js";
import { busOptionsOf, redisTargetOf } from "@byok/config";
import { kekFor, memoryMetering, openGatewayStore, prepareDefaultTenant, redisMetering, tenancyEngineDeps } from "./tenancy.js";
import { createRunWorker, type RunWorker } from "./worker.js";

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
  const metrics = createMetrics();
  const redis = redisTargetOf(config);
  const d = config.distributed;
  // Tenancy (issue 6): the KEK from GATEWAY_KEK (no KEK: stored credentials stay sealed and
  // their targets are skipped), the file's routes applied to the default tenant, and the meter
  // on Redis (budgets and rate limits shared by every replica; in memory without REDIS_URL).
  const store = await openGatewayStore(config, await kekFor(config, undefined));
  await prepareDefaultTenant(store, config);
  // Metering speaks to one Redis node; on a Redis Cluster it falls back to this process's memory
  // (documented in docs/tenancy.md) rather than failing every run on MOVED replies.
  const metering = config.redisUrl && !d.redisClusterNodes ? redisMetering({ url: config.redisUrl }, store, d.redisKeyPrefix) : memoryMetering(store);
  const tenancy = tenancyEngineDeps({ store, config, env: opts.env ?? process.env, ...metering, logger });
  const bus = createRedisBus({
    redis,
    keyPrefix: d.redisKeyPrefix,
    name: `${name}:bus`,
    options: busOptionsOf(config),
    onError: (err) => logger.warn({ err: err.message }, "redis bus"),
  });
  const engine = createServiceEngine({ config, bus, store, tenancy, logger, ...(opts.retry ? { retry: opts.retry } : {}) });

  const runWorker = createRunWorker(
    {
      redis,
      name: d.queueName,
      prefix: d.queuePrefix,
      concurrency: d.workerConcurrency,
      lockDurationMs: d.lockDurationMs,
      stalledIntervalMs: d.stalledIntervalMs,
      maxStalledCount: d.maxStalledCount,
      connectionName: name,
    },
    { engine, bus, logger, metrics },
  );
  await runWorker.ready();

  const metricsText = metricsHandler(metrics);
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path === "/healthz") return void res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    if (path === "/readyz") {
      const ok = runWorker.worker.isRunning();
      return void res.writeHead(ok ? 200 : 503, { "content-type": "text/plain" }).end(ok ? "ready\n" : "not ready\n");
    }
    if (path === "/metrics") return void metricsText().then((m) => res.writeHead(m.status, { "content-type": m.contentType }).end(m.body));
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${addr.port}`,
    name,
    runWorker,
    bus,
    store,
    logger,
    close() {
      closing ??= (async () => {
        await runWorker.close();
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
        await bus.close();
        await metering.budgets.close();
        await metering.rates.close();
        await store.close();
      })();
      return closing;
    },
  };
}
