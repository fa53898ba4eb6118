import { GenerationGoneError } from "../errors.js";
import { Cluster, Redis, type ClusterNode, type RedisOptions } from "ioredis";

/** ioredis connection options (host, port, password, tls ...) or a redis:// URL. */
export type RedisConnectionOptions = RedisOptions;

/**
 * A Redis Cluster: seed nodes plus options applied to every node connection. Every key of one
 * request shares a hash tag, so each script and MULTI runs on one node.
 */
export interface RedisClusterTarget {
  cluster: ClusterNode[];
  /** Options of each node connection (password, tls ...). */
  nodeOptions?: RedisOptions;
}

/** Where a bus (or a BullMQ queue) connects: a URL, standalone options, or a cluster. */
export type RedisTarget = RedisConnectionOptions | string | RedisClusterTarget;

/** A standalone or cluster connection; both expose the same command API. */
export type RedisClient = Redis | Cluster;

export function isClusterTarget(target: RedisTarget): target is RedisClusterTarget {
  return typeof target === "object" && "cluster" in target && Array.isArray(target.cluster);
}

/**
 * Redis could not be reached (or answered "try later"): the operation had no effect the
 * caller can rely on. The ingress answers `unavailable`; the worker ends or retries its run.
 */
export class BusUnavailableError extends Error {
  readonly code = "unavailable";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "BusUnavailableError";
  }
}

/** Reply errors that mean "the server cannot serve now", not "the command is wrong". */
const TRANSIENT_REPLY = /^(LOADING|BUSY|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|READONLY|NOREPLICAS|MOVED|ASK)\b/;

/** Maps an ioredis failure: connection-level and transient ones become BusUnavailableError. */
export function toBusError(err: unknown, what: string): Error {
  if (err instanceof BusUnavailableError || err instanceof GenerationGoneError) return err;
  if (err instanceof Error) {
    if (err.name === "ReplyError" && !TRANSIENT_REPLY.test(err.message)) return err;
    return new BusUnavailableError(`redis bus: ${what} failed: ${err.message}`, { cause: err });
  }
  return new BusUnavailableError(`redis bus: ${what} failed`, { cause: err });
}

export interface ConnectionTuning {
  /** Client name (CLIENT SETNAME) of this connection. */
  name: string;
  /** A command fails after this long without a reply. */
  commandTimeoutMs: number;
  /** Reconnect delay (ms) for the n-th attempt; reconnects never stop. */
  reconnectDelayMs: (attempt: number) => number;
  onError: (err: Error) => void;
}

/**
 * The command connection: commands issued while the first connection is being made wait for
 * it, but once it was lost they fail at once (no offline queue growing while Redis is down),
 * and a queued command is flushed with an error after one failed reconnect attempt.
 */
export function openConnection(target: RedisTarget, tuning: ConnectionTuning, subscriber: boolean): Redis {
  const options: RedisOptions = {
    ...(typeof target === "string" || isClusterTarget(target) ? {} : target),
    connectionName: tuning.name,
    maxRetriesPerRequest: 1,
    commandTimeout: tuning.commandTimeoutMs,
    retryStrategy: (attempt) => tuning.reconnectDelayMs(attempt),
    // The subscriber re-subscribes itself after a reconnect (and wakes every listener then).
    autoResubscribe: false,
    // A subscriber command while disconnected fails; the "ready" handler subscribes again.
    enableOfflineQueue: !subscriber,
    // Never resend a command whose reply was lost: it may have run (append-output is not
    // idempotent, so a resend could duplicate frames). See the close handler below.
    autoResendUnfulfilledCommands: false,
    lazyConnect: false,
  };
  if (isClusterTarget(target)) return openClusterConnection(target, options, tuning) as unknown as Redis;
  const redis = typeof target === "string" ? new Redis(target, options) : new Redis(options);
  // Without a listener an "error" event would be reported as unhandled; connection errors are
  // expected during outages and surface to callers as BusUnavailableError.
  redis.on("error", tuning.onError);
  if (!subscriber) {
    // Commands sent but unanswered when the connection dropped may or may not have run. Fail
    // them now as unavailable (the outcome is unknown to the caller, exactly as with a timeout)
    // instead of letting them hang until the command timeout. "close" is emitted
    // on the next tick, before any reconnect (a timer) can queue new commands.
    redis.on("close", () => {
      const lost = new Error("connection to Redis lost before the reply");
      for (let item = redis.commandQueue.shift(); item; item = redis.commandQueue.shift()) item.command.reject(lost);
    });
  }
  return redis;
}

/**
 * A cluster connection with the same per-node behaviour (fail fast, never resend a command
 * whose reply was lost, bounded reply wait). Returned typed as `Redis`: the bus uses only the
 * command surface both classes share (commands, defineCommand'd scripts, MULTI on one slot,
 * SUBSCRIBE, status, quit/disconnect). Differences: the per-node "close" flush of unanswered
 * commands is not installed (the command timeout bounds them instead), and classic pub/sub
 * is used (PUBLISH reaches every node, so one subscriber hears every channel).
 */
function openClusterConnection(target: RedisClusterTarget, nodeOptions: RedisOptions, tuning: ConnectionTuning): Cluster {
  const { maxRetriesPerRequest, retryStrategy: _perNodeRetry, enableOfflineQueue, lazyConnect, ...perNode } = nodeOptions;
  const cluster = new Cluster(target.cluster, {
    redisOptions: { ...target.nodeOptions, ...perNode },
    maxRedirections: 16,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    enableOfflineQueue: enableOfflineQueue ?? true,
    enableReadyCheck: true,
    lazyConnect: lazyConnect ?? false,
    clusterRetryStrategy: (attempt) => tuning.reconnectDelayMs(attempt),
    ...(maxRetriesPerRequest !== undefined ? { maxRetriesPerRequest } : {}),
  });
  cluster.on("error", tuning.onError);
  return cluster;
}

/** True while a command would be queued behind a lost connection instead of being sent. */
export function isDisconnected(redis: RedisClient): boolean {
  return redis.status === "reconnecting" || redis.status === "close" || redis.status === "end";
}
