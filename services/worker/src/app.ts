import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRunEngine, createTargetResolver } from "@byok/agent";
import { createRedisBus, type Bus } from "@byok/bus";
import type { GatewayConfig } from "@byok/config";
import { retryPolicy, type ProviderAdapter, type ProviderKind, type RetryPolicy } from "@byok/providers";
import { createStore, type Store } from "@byok/store";
import { createLogger, createMetrics, metricsHandler, registerSecret, type Logger } from "@byok/telemetry";
import { createProviderAdapters } from "./adapters.js";
import { redisTargetOf } from "./redis-target.js";
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
  const store = await createStore(
    config.store.driver === "postgres"
      ? { driver: "postgres", url: config.store.url, ...(config.store.schema ? { schema: config.store.schema } : {}) }
      : { driver: "pglite", ...(config.store.dataDir ? { dataDir: config.store.dataDir } : {}) },
  );
  const bus = createRedisBus({
    redis,
    keyPrefix: d.redisKeyPrefix,
    name: `${name}:bus`,
    options: {
      seqnoWindow: config.limits.seqnoWindow,
      maxOutputFrames: config.limits.maxOutputFrames,
      maxInputEntries: config.limits.maxInputEntries,
      finishedRetentionMs: config.timers.finishedRetentionMs,
      sequenceStateTtlMs: config.timers.sequenceStateTtlMs,
    },
    onError: (err) => logger.warn({ err: err.message }, "redis bus"),
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
    // Every engine timer comes from the validated config (reconnect grace, presence checks, …).
    timers: config.timers,
    logger,
    registerSecret: (s) => registerSecret(s),
  });
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
        await store.close();
      })();
      return closing;
    },
  };
}
