import { Queue, UnrecoverableError, WaitingError, Worker, type Job } from "bullmq";
import { endFailedGeneration, failedRunError, type RunEngine } from "@byok/agent";
import {
  assertQueueName, assertQueuePrefix, GenerationGoneError, openQueueConnection, RUN_JOB_NAME, startWorkerPresence, type Bus, type RedisTarget, type RequestRef,
  type RunJobData, type RunQueueSettings,
} from "@byok/bus";
import type { GatewayMetrics, Logger, QueueState } from "@byok/telemetry";

export interface RunWorkerConfig extends RunQueueSettings {
  redis: RedisTarget;
  /** Generations this process runs at once (hundreds: a run is mostly waiting on I/O). */
  concurrency: number;
  /** BullMQ job lock; renewed every lockDurationMs/2 while this process lives. */
  lockDurationMs: number;
  /** How often this worker re-queues jobs whose lock expired (a dead worker's runs). */
  stalledIntervalMs: number;
  /** How often this worker looks for workers whose process is gone and frees their runs (worker-presence.ts in @byok/bus). */
  deadWorkerCheckMs: number;
  /** Stall recoveries of one job before BullMQ fails it. */
  maxStalledCount: number;
  /** Client name prefix of the worker's connections (CLIENT LIST shows `<connectionName>:worker`). */
  connectionName: string;
}

export interface RunWorkerDeps {
  engine: RunEngine;
  bus: Bus;
  logger: Logger;
  metrics?: GatewayMetrics;
}

export interface RunWorker {
  readonly worker: Worker<RunJobData>;
  /** Resolves once the worker's connections are ready. */
  ready(): Promise<void>;
  /** Generations running in this process now. */
  running(): number;
  /** Run jobs in the queue by state (for the queue depth gauge). */
  counts(): Promise<Record<QueueState, number>>;
  /**
   * Graceful close (SIGTERM): stop taking jobs, abort every running generation and hand its job
   * back to the queue (moved to wait, not completed and not failed), so another worker takes
   * it over at once from the snapshot. Resolves when every connection is closed.
   */
  close(): Promise<void>;
}

/**
 * The provider worker: a BullMQ Worker whose processor runs one generation with the run
 * engine. The engine claims the generation first (bumping the fencing epoch), so holding the
 * job and owning the generation coincide; a worker that lost its lock (stall, pause) is fenced
 * by the epoch on its next write, whatever BullMQ believes.
 *
 * Outcomes of one job
 * - the generation ended (any status): the job completes;
 * - the engine threw (the bus was unavailable, or a bug): the job fails and BullMQ retries it
 *   after the backoff, the retry being a takeover exactly as after a dead worker; after the last
 *   attempt the generation is ended `internal` with ErrorDetails so its readers do not wait forever;
 * - this worker is closing: the job is moved back to wait (WaitingError) and another worker
 *   takes it over;
 * - this worker died (kill -9, OOM): its presence subscription vanished with its connections;
 *   another worker's presence check (every deadWorkerCheckMs) frees its jobs and the next
 *   stalled check re-queues them (takeover ≈ deadWorkerCheckMs + stalledIntervalMs);
 * - this worker hangs or is cut off with its sockets open: its lock expires, the stalled check
 *   of another worker re-queues the job (takeover ≈ lockDurationMs + stalledIntervalMs).
 */
export function createRunWorker(config: RunWorkerConfig, deps: RunWorkerDeps): RunWorker {
  assertQueueName(config.name);
  assertQueuePrefix(config.prefix);
  const log = deps.logger;
  const warnOnce = throttledWarn(log, 5_000);
  const shutdown = new AbortController();
  let active = 0;
  const connection = openQueueConnection(config.redis, {
    name: `${config.connectionName}:worker`,
    blocking: true,
    onError: (err) => warnOnce("worker redis connection", err.message),
  });
  // Queue depth is read with plain commands: a connection of its own next to the blocking one.
  const countsConnection = openQueueConnection(config.redis, {
    name: `${config.connectionName}:counts`,
    blocking: false,
    onError: (err) => warnOnce("worker redis connection", err.message),
  });
  const queue = new Queue<RunJobData>(config.name, { connection: countsConnection, prefix: config.prefix, skipWaitingForReady: true });
  queue.on("error", (err) => warnOnce("queue counts", err.message));

  const processor = async (job: Job<RunJobData>, token?: string, cancel?: AbortSignal): Promise<void> => {
    if (job.name !== RUN_JOB_NAME) throw new Error(`unknown job ${job.name}`);
    const { tenantId, requestId, generation } = job.data;
    const ref: RequestRef = { tenantId, requestId };
    const stop = AbortSignal.any([shutdown.signal, ...(cancel ? [cancel] : [])]);
    // Queue wait of the job's first start (a takeover's wait would count the previous owner's run).
    if (job.attemptsStarted <= 1 && job.stalledCounter === 0) deps.metrics?.queueWait.observe(Math.max(0, Date.now() - job.timestamp) / 1000);
    active++;
    try {
      await deps.engine.runGeneration(ref, generation, stop, { trace: job.data.trace });
    } catch (err) {
      // Nothing can run a generation the bus no longer holds: no retry (BullMQ fails it at once).
      if (err instanceof GenerationGoneError) throw new UnrecoverableError(err.message);
      throw err;
    } finally {
      active--;
    }
    if (shutdown.signal.aborted && token) {
      // Unknown (Redis unreachable) counts as not ended: handing back is always safe, since a
      // new owner of an ended generation completes at once; completing a live one orphans it.
      const info = await deps.bus.latestGeneration(ref).then((i) => i ?? null, () => "unknown" as const);
      const ended = info !== "unknown" && (info === null || info.generation > generation || (info.generation === generation && info.ended));
      if (!ended) {
        // Hand the run over: back to wait (not completed, not counted as a failed attempt).
        await job.moveToWait(token);
        log.info({ requestId, generation, jobId: job.id }, "run handed back to the queue (worker closing)");
        throw new WaitingError();
      }
    }
  };

  const worker = new Worker<RunJobData>(config.name, processor, {
    connection,
    prefix: config.prefix,
    name: config.connectionName,
    concurrency: config.concurrency,
    lockDuration: config.lockDurationMs,
    stalledInterval: config.stalledIntervalMs,
    maxStalledCount: config.maxStalledCount,
    // Finished jobs: kept (the queue's defaults decide how long) so late duplicate adds stay no-ops.
    autorun: true,
  });
  worker.on("error", (err) => warnOnce("worker error", err.message));
  const presence = startWorkerPresence({
    redis: config.redis,
    queue: { name: config.name, prefix: config.prefix },
    workerName: config.connectionName,
    checkMs: config.deadWorkerCheckMs,
    commands: countsConnection,
    onError: (err) => warnOnce("worker presence", err.message),
    onReleased: (jobIds) => log.warn({ jobIds }, "freed the runs of a dead worker for takeover"),
  });
  worker.on("lockRenewalFailed", (ids) => log.warn({ jobIds: ids }, "job lock lost (another worker may take the run over)"));
  worker.on("failed", (job, err) => {
    if (!job) return;
    // The last attempt, or one BullMQ will not retry (a gone generation, a job past its stall limit).
    const final = job.attemptsMade >= (job.opts.attempts ?? 1) || err instanceof UnrecoverableError || err.name === "UnrecoverableError";
    log.warn({ jobId: job.id, attemptsMade: job.attemptsMade, final, err: err.message }, "run job failed");
    if (final) void endFailed(job.data, err);
  });

  /** A run job that will not be retried: end its generation so readers get a clear status. */
  async function endFailed(data: RunJobData, err: Error): Promise<void> {
    const ref = { tenantId: data.tenantId, requestId: data.requestId };
    await endFailedGeneration(deps.bus, ref, data.generation, failedRunError(err)).catch((err: unknown) =>
      log.warn({ err: (err as Error).message, requestId: data.requestId }, "could not end a failed run"),
    );
  }

  let closing: Promise<void> | undefined;
  return {
    worker,
    ready: () => Promise.all([worker.waitUntilReady(), presence.ready()]).then(() => undefined),
    running: () => active,
    async counts() {
      const c = await queue.getJobCounts("waiting", "active", "delayed", "prioritized");
      return { waiting: c.waiting ?? 0, active: c.active ?? 0, delayed: c.delayed ?? 0, prioritized: c.prioritized ?? 0 };
    },
    close() {
      closing ??= (async () => {
        // Unregistered first: no other worker frees the runs this one hands back itself.
        await presence.close();
        const closed = worker.close(); // stops fetching; waits for the active jobs below
        shutdown.abort();
        await closed;
        await queue.close().catch(() => undefined);
        await connection.quit().catch(() => connection.disconnect());
        await countsConnection.quit().catch(() => countsConnection.disconnect());
      })();
      return closing;
    },
  };
}

/**
 * During an outage BullMQ and ioredis report the same error on every reconnect attempt; log
 * each distinct (message, error) at most once per `windowMs`, with the number suppressed.
 */
function throttledWarn(log: Logger, windowMs: number): (msg: string, err: string) => void {
  const last = new Map<string, { at: number; suppressed: number }>();
  return (msg, err) => {
    const key = `${msg}\u0000${err}`;
    const now = Date.now();
    const seen = last.get(key);
    if (seen && now - seen.at < windowMs) {
      seen.suppressed++;
      return;
    }
    if (last.size > 1_000) last.clear();
    last.set(key, { at: now, suppressed: 0 });
    log.warn({ err, ...(seen?.suppressed ? { suppressed: seen.suppressed } : {}) }, msg);
  };
}
