import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from "ioredis";
import { coalesceClientWrites } from "./coalesce.js";

/** ioredis connection options (host, port, password, tls ...) or a redis:// URL. */
export type RedisConnectionOptions = RedisOptions;

/**
 * A Redis Cluster: seed nodes plus options applied to every node connection. Every key of one
 * script (or MULTI) shares a hash tag (hash-tag.ts), so each runs on one node.
 */
export interface RedisClusterTarget {
  cluster: ClusterNode[];
  /** Options of each node connection (password, tls ...). */
  nodeOptions?: RedisOptions;
}

/** Where a client connects: a URL, standalone options, or a cluster. */
export type RedisTarget = RedisConnectionOptions | string | RedisClusterTarget;

/** A standalone or cluster connection; both expose the same command API. */
export type RedisClient = Redis | Cluster;

export function isClusterTarget(target: RedisTarget): target is RedisClusterTarget {
  return typeof target === "object" && "cluster" in target && Array.isArray(target.cluster);
}

/**
 * The one place a target becomes an ioredis client: one node by URL or by options, or a Cluster
 * over the seed nodes whose node connections take `nodeOptions` over the target's own, except
 * the settings a Cluster holds for itself (retries, reconnects, offline queue, lazy connect:
 * `clusterOptions` carries those). Its socket writes are coalesced per event-loop turn
 * (coalesce.ts). No other listener is attached: the caller adds its "error" handler.
 */
export function createClient(target: RedisTarget, nodeOptions: RedisOptions, clusterOptions: Omit<ClusterOptions, "redisOptions"> = {}): RedisClient {
  let client: RedisClient;
  if (isClusterTarget(target)) {
    const { maxRetriesPerRequest: _retries, retryStrategy: _reconnect, enableOfflineQueue: _queue, lazyConnect: _lazy, ...perNode } = nodeOptions;
    client = new Cluster(target.cluster, { ...clusterOptions, redisOptions: { ...target.nodeOptions, ...perNode } });
  } else {
    client = typeof target === "string" ? new Redis(target, nodeOptions) : new Redis({ ...target, ...nodeOptions });
  }
  coalesceClientWrites(client);
  return client;
}

export interface ConnectionTuning {
  /** Client name (CLIENT SETNAME) of this connection. */
  name: string;
  /** A command fails after this long without a reply. */
  commandTimeoutMs: number;
  /** Reconnect delay (ms) for the n-th attempt; reconnects never stop. */
  reconnectDelayMs: (attempt: number) => number;
  onError: (err: Error) => void;
  /** A pub/sub connection: it re-subscribes itself after a reconnect. Default false. */
  subscriber?: boolean;
}

/** The tuning of a command connection: 5 s reply bound, reconnect delay min(50·n, 1000) ms. */
export function defaultTuning(name: string, onError: (err: Error) => void = () => undefined): ConnectionTuning {
  return { name, commandTimeoutMs: 5_000, reconnectDelayMs: (n) => Math.min(50 * n, 1_000), onError };
}

/**
 * A command connection: commands issued while the first connection is being made wait for
 * it, but once it was lost they fail at once (no offline queue growing while Redis is down),
 * and a queued command is flushed with an error after one failed reconnect attempt. A command
 * whose reply was lost is never resent (it may have run; scripts need not be idempotent).
 */
export function openConnection(target: RedisTarget, tuning: ConnectionTuning): Redis {
  const subscriber = tuning.subscriber ?? false;
  const options: RedisOptions = {
    connectionName: tuning.name,
    maxRetriesPerRequest: 1,
    commandTimeout: tuning.commandTimeoutMs,
    retryStrategy: (attempt) => tuning.reconnectDelayMs(attempt),
    // The subscriber re-subscribes itself after a reconnect (and wakes every listener then).
    autoResubscribe: false,
    // A subscriber command while disconnected fails; its "ready" handler subscribes again.
    enableOfflineQueue: !subscriber,
    autoResendUnfulfilledCommands: false,
    lazyConnect: false,
  };
  if (isClusterTarget(target)) return openClusterConnection(target, options, tuning) as unknown as Redis;
  const redis = createClient(target, options) as Redis;
  // Without a listener an "error" event would be reported as unhandled; connection errors are
  // expected during outages and surface to callers as failed commands.
  redis.on("error", tuning.onError);
  if (!subscriber) {
    // Commands sent but unanswered when the connection dropped may or may not have run. Fail
    // them now (the outcome is unknown to the caller, exactly as with a timeout) instead of
    // letting them hang until the command timeout. "close" is emitted on the next tick,
    // before any reconnect (a timer) can queue new commands.
    redis.on("close", () => {
      const lost = new Error("connection to Redis lost before the reply");
      for (let item = redis.commandQueue.shift(); item; item = redis.commandQueue.shift()) item.command.reject(lost);
    });
  }
  return redis;
}

/**
 * A cluster connection with the same per-node behaviour (fail fast, never resend a command
 * whose reply was lost, bounded reply wait). Returned typed as `Redis`: callers use only the
 * command surface both classes share (commands, defineCommand'd scripts, MULTI on one slot,
 * SUBSCRIBE, status, quit/disconnect). Differences: the per-node "close" flush of unanswered
 * commands is not installed (the command timeout bounds them instead), and a subscriber
 * connection has ioredis's sharded subscribers: SSUBSCRIBE goes to the master that owns the
 * channel's slot, over one connection per master with subscribed channels (reconnected, and
 * its channels re-subscribed, by ioredis, which then emits "subscribersReady"); classic
 * SUBSCRIBE still uses one node (classic PUBLISH reaches every node).
 */
function openClusterConnection(target: RedisClusterTarget, nodeOptions: RedisOptions, tuning: ConnectionTuning): Cluster {
  const { maxRetriesPerRequest, enableOfflineQueue, lazyConnect } = nodeOptions;
  const cluster = createClient(target, nodeOptions, {
    maxRedirections: 16,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    enableOfflineQueue: enableOfflineQueue ?? true,
    enableReadyCheck: true,
    lazyConnect: lazyConnect ?? false,
    clusterRetryStrategy: (attempt) => tuning.reconnectDelayMs(attempt),
    ...(tuning.subscriber ? { shardedSubscribers: true } : {}),
    ...(maxRetriesPerRequest !== undefined ? { maxRetriesPerRequest } : {}),
  }) as Cluster;
  cluster.on("error", tuning.onError);
  return cluster;
}

/** True while a command would be queued behind a lost connection instead of being sent. */
export function isDisconnected(redis: RedisClient): boolean {
  return redis.status === "reconnecting" || redis.status === "close" || redis.status === "end";
}

/** Closes a connection: QUIT, or a hard disconnect when QUIT cannot be sent. */
export async function closeConnection(redis: RedisClient): Promise<void> {
  await redis.quit().catch(() => redis.disconnect());
}
