import { createClient, type RedisClient, type RedisTarget } from "@byok/redis";

/**
 * Opens an ioredis client for BullMQ. `blocking` clients (a Worker's) need
 * `maxRetriesPerRequest: null` (BullMQ requires it for its blocking commands); producer clients
 * fail fast instead (`maxRetriesPerRequest: 1`, a command timeout), so a BidiAppend answers
 * `unavailable` during an outage rather than hanging.
 */
export function openQueueConnection(
  target: RedisTarget,
  opts: { name: string; blocking: boolean; commandTimeoutMs?: number; onError?: (err: Error) => void },
): RedisClient {
  const client = createClient(
    target,
    {
      connectionName: opts.name,
      maxRetriesPerRequest: opts.blocking ? null : 1,
      ...(opts.blocking ? {} : { commandTimeout: opts.commandTimeoutMs ?? 5_000 }),
      retryStrategy: (n) => Math.min(50 * n, 1_000),
    },
    {
      clusterRetryStrategy: (n) => Math.min(50 * n, 1_000),
      retryDelayOnClusterDown: 100,
      retryDelayOnFailover: 100,
      ...(opts.blocking ? { maxRetriesPerRequest: null } : {}),
    },
  );
  // An outage must never crash the process: connection errors surface as failed operations.
  client.on("error", opts.onError ?? (() => undefined));
  return client;
}
