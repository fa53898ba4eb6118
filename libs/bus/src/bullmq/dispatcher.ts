import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { isDisconnected, type RedisClient, type RedisTarget } from "@byok/redis";
import { BusUnavailableError } from "../redis/unavailable.js";
import type { TraceCarrier } from "@byok/telemetry";
import type { RequestRef, RunDispatcher, RunRefusal } from "../types.js";
import { openQueueConnection } from "./connection.js";
import { runJobId } from "./job-id.js";
import { assertQueueName, assertQueuePrefix, RUN_JOB_NAME, type RunJobData, type RunQueueSettings } from "./types.js";

export interface BullmqDispatcherConfig extends RunQueueSettings {
  /** Where the queue lives (may be another Redis than the bus). */
  redis: RedisTarget;
  /** Client name of the producer connection (CLIENT LIST shows `<name>:queue`). */
  connectionName?: string;
  /** Attempts of a job whose processor failed; each retry is a takeover (default 5). */
  attempts?: number;
  /** Fixed delay before such a retry (default 200 ms). */
  backoffMs?: number;
  /**
   * How long finished jobs are kept (default 3600 s). While kept, a late duplicate append of
   * that generation is a no-op at the queue; after it, the re-added job finds the generation
   * ended and completes at once.
   */
  keepFinishedSeconds?: number;
  /**
   * Runs waiting for a worker (queued, not yet started) past which `admit()` refuses a new run
   * (GATEWAY_MAX_WAITING_RUNS); 0 (default): no limit.
   */
  maxWaitingRuns?: number;
  /** Reply wait of the producer connection (default 5000 ms). */
  commandTimeoutMs?: number;
  onError?: (err: Error) => void;
}

export interface BullmqDispatcher extends RunDispatcher {
  /** The BullMQ queue (tests and operators: counts, job states). */
  readonly queue: Queue<RunJobData>;
  close(): Promise<void>;
}

/**
 * Distributed mode's dispatcher: one BullMQ job per run generation.
 *
 * Guarantees
 * - Idempotent per (request, generation): the job id is deterministic (`runJobId`), and BullMQ's
 *   add is a no-op while a job with that id exists (waiting, active, delayed, or finished and
 *   still kept). A retried BidiAppend therefore re-adds harmlessly.
 * - Resolves only once Redis confirmed the add; rejects with BusUnavailableError when Redis
 *   cannot be reached, at once while disconnected (no offline queue growing during an outage).
 * - A later generation has its own id, so a finished job never blocks it.
 * - One producer connection per instance, whatever the number of requests.
 * - `admit()` refuses while `maxWaitingRuns` runs or more wait for a worker (all workers busy at
 *   their concurrency), so overload is answered at once instead of queueing without bound.
 */
export function createBullmqDispatcher(config: BullmqDispatcherConfig): BullmqDispatcher {
  assertQueueName(config.name);
  assertQueuePrefix(config.prefix);
  const keep = config.keepFinishedSeconds ?? 3_600;
  const connection: RedisClient = openQueueConnection(config.redis, {
    name: `${config.connectionName ?? `byok-dispatch-${randomUUID().slice(0, 8)}`}:queue`,
    blocking: false,
    ...(config.commandTimeoutMs !== undefined ? { commandTimeoutMs: config.commandTimeoutMs } : {}),
    ...(config.onError ? { onError: config.onError } : {}),
  });
  const queue = new Queue<RunJobData>(config.name, {
    connection,
    prefix: config.prefix,
    skipWaitingForReady: true,
    defaultJobOptions: {
      attempts: config.attempts ?? 5,
      backoff: { type: "fixed", delay: config.backoffMs ?? 200 },
      removeOnComplete: { age: keep, count: 100_000 },
      removeOnFail: { age: 24 * 3_600 },
    },
  });
  queue.on("error", config.onError ?? (() => undefined));
  let closed = false;

  return {
    queue,
    async dispatch(ref: RequestRef, generation: number, trace: TraceCarrier): Promise<void> {
      if (closed) throw new BusUnavailableError("run dispatcher: closed");
      if (isDisconnected(connection)) throw new BusUnavailableError(`run dispatcher: not connected to Redis (${connection.status})`);
      const data: RunJobData = { tenantId: ref.tenantId, requestId: ref.requestId, generation, trace };
      try {
        await queue.add(RUN_JOB_NAME, data, { jobId: runJobId(ref, generation) });
      } catch (err) {
        throw new BusUnavailableError(`run dispatcher: adding the run job failed: ${(err as Error).message}`, { cause: err });
      }
    },
    async admit(): Promise<RunRefusal | undefined> {
      const limit = config.maxWaitingRuns ?? 0;
      if (limit === 0) return undefined;
      if (isDisconnected(connection)) throw new BusUnavailableError(`run dispatcher: not connected to Redis (${connection.status})`);
      // One round trip of two commands: the lengths of the wait list and the prioritized set
      // (BullMQ's "waiting"). Not getJobCountByTypes: its script also looks for a wait-list
      // marker that only BullMQ < 5 wrote (LINDEX), 4 commands per new run instead of 2.
      const waiting = await readWaiting(connection, queue).catch((err: unknown) => {
        throw new BusUnavailableError(`run dispatcher: reading the queue depth failed: ${(err as Error).message}`, { cause: err });
      });
      return waiting >= limit ? { waiting, limit } : undefined;
    },
    async close() {
      if (closed) return;
      closed = true;
      await queue.close().catch(() => undefined);
      await connection.quit().catch(() => connection.disconnect());
    },
  };
}

/**
 * Jobs waiting for a worker: LLEN of the wait list + ZCARD of the prioritized set, in one round
 * trip (the connection sends the commands of one event-loop turn in one write, @byok/redis
 * `coalesceWrites`). Not an ioredis pipeline: building one copies every script command defined
 * on the connection (BullMQ's, dozens) onto the pipeline object, which cost more CPU than the
 * two commands themselves (docs/benchmarks.md "Taken: the queue depth without a pipeline").
 */
async function readWaiting(connection: RedisClient, queue: Queue<RunJobData>): Promise<number> {
  const [wait, prioritized] = await Promise.all([connection.llen(queue.toKey("wait")), connection.zcard(queue.toKey("prioritized"))]);
  return wait + prioritized;
}
