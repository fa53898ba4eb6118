import { Redis, type RedisOptions } from "ioredis";

/** ioredis connection options (host, port, password, tls ...) or a redis:// URL. */
export type RedisConnectionOptions = RedisOptions;

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
  if (err instanceof BusUnavailableError) return err;
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
export function openConnection(target: RedisConnectionOptions | string, tuning: ConnectionTuning, subscriber: boolean): Redis {
  const options: RedisOptions = {
    ...(typeof target === "string" ? {} : target),
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

/** True while a command would be queued behind a lost connection instead of being sent. */
export function isDisconnected(redis: Redis): boolean {
  return redis.status === "reconnecting" || redis.status === "close" || redis.status === "end";
}
