import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import { createBullmqDispatcher, type Bus, type BullmqDispatcher } from "@byok/bus";
import type { CompatHandler } from "@byok/compat";
import type { ControlPlane } from "@byok/control-plane";
import { redisTargetOf, type GatewayConfig } from "@byok/config";
import { createConnectionRefusal, createOpenAuthenticator, OpenStreams, type Authenticator } from "@byok/edge";
import { listenEdge, openRedisBus } from "@byok/process";
import { createLogger, createMetrics, type GatewayMetrics, type Logger } from "@byok/telemetry";
import { createIngressHandler } from "./handler.js";

export interface IngressService {
  /** Base URL, e.g. http://127.0.0.1:8787 */
  url: string;
  /** Client name prefix of this replica's Redis connections (`<name>:bus:cmd`, `<name>:bus:sub`, `<name>:queue`). */
  name: string;
  server: Server;
  bus: Bus;
  dispatcher: BullmqDispatcher;
  logger: Logger;
  /**
   * Graceful shutdown (SIGTERM): readiness fails and new RunSSE streams are refused at once,
   * open ones continue up to GATEWAY_DRAIN_GRACE_MS, the rest are cut (clients resume on
   * another replica); then the service closes. Resolves with the number of streams cut.
   */
  drain(): Promise<{ cut: number }>;
  close(): Promise<void>;
}

export interface IngressServiceOptions {
  logger?: Logger;
  /** Default: open mode (one tenant). The tenancy issue supplies API-key authentication. */
  auth?: Authenticator;
  /** The control plane (sign-in, catalogue, aiserver.v1 procedures); its authenticator then replaces `auth`. */
  controlPlane?: (deps: { metrics: GatewayMetrics; logger: Logger }) => ControlPlane;
  /** The OpenAI-/Anthropic-compatible endpoints, given the replica's authenticator (docs/compat.md). */
  compat?: (deps: { auth: Authenticator; logger: Logger; metrics: GatewayMetrics }) => CompatHandler;
  name?: string;
}

/**
 * An ingress replica (distributed mode): the Connect edge over the Redis bus, dispatching run
 * generations to the BullMQ queue. Stateless: any replica serves any BidiAppend or RunSSE, and
 * it holds three Redis connections whatever the number of open streams (bus command + bus
 * subscriber + queue producer).
 */
export async function startIngressService(config: GatewayConfig, opts: IngressServiceOptions = {}): Promise<IngressService> {
  const logger = opts.logger ?? createLogger({ service: "ingress", level: config.logLevel });
  const name = opts.name ?? `byok-ingress-${randomUUID().slice(0, 8)}`;
  const d = config.distributed;
  const redis = redisTargetOf(config);
  const bus = openRedisBus(config, name, logger);
  const dispatcher = createBullmqDispatcher({
    redis,
    name: d.queueName,
    prefix: d.queuePrefix,
    connectionName: name,
    attempts: d.jobAttempts,
    backoffMs: d.jobBackoffMs,
    maxWaitingRuns: d.maxWaitingRuns,
    keepFinishedSeconds: Math.max(60, Math.ceil(config.timers.finishedRetentionMs / 1000)),
    onError: (err) => logger.warn({ err: err.message }, "run queue"),
  });
  const metrics = createMetrics(config.telemetry);
  const controlPlane = opts.controlPlane?.({ metrics, logger });
  const probe = { tenantId: config.defaultTenant, requestId: "__readyz__" };
  metrics.watchDependency("redis", () => bus.latestGeneration(probe));
  const streams = new OpenStreams(config.limits.maxRunSseStreams);
  const auth = controlPlane?.auth ?? opts.auth ?? createOpenAuthenticator(config.defaultTenant);
  const compat = opts.compat?.({ auth, logger, metrics });
  const handler = createIngressHandler({
    bus,
    dispatcher,
    auth,
    ...(compat ? { compat } : {}),
    ...(controlPlane ? { controlPlane } : {}),
    timers: config.timers,
    limits: config.limits,
    logger,
    metrics,
    ready: async () => {
      await bus.latestGeneration(probe);
    },
    streams,
  });
  // HTTP/1.1 and HTTP/2 (h2 over TLS when configured, else h2c) on one port.
  const edge = await listenEdge(handler, {
    host: config.host,
    port: config.port,
    tls: config.controlPlane.tls,
    backlog: config.limits.listenBacklog,
    sockets: config.limits.listenSockets,
    connections: { max: config.limits.maxConnections, refuse: createConnectionRefusal(config.limits.maxConnections), metrics },
  });
  const server = edge.http1;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      await edge.close();
      await dispatcher.close();
      await bus.close();
    })();
    return closing;
  };
  return {
    url: edge.url,
    name,
    server,
    bus,
    dispatcher,
    logger,
    async drain() {
      logger.info({ open: streams.open, graceMs: config.timers.drainGraceMs }, "draining");
      const { cut } = await streams.drain(config.timers.drainGraceMs);
      logger.info({ cut }, "drained");
      // Let the cut connections flush their last whole frames before the rest are closed.
      const closed = edge.stopAccepting();
      server.closeIdleConnections();
      await Promise.race([closed, new Promise((r) => setTimeout(r, 1_000).unref())]);
      await close();
      return { cut };
    },
    close,
  };
}
