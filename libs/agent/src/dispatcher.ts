import type { Bus, RequestRef, RunDispatcher } from "@byok/bus";
import type { Logger, TraceCarrier } from "@byok/telemetry";
import { endFailedGeneration, failedRunError } from "./failed-run.js";
import type { RunEngine } from "./ports.js";

/**
 * Embedded mode's dispatcher: runs each generation in this process, once. Dispatching the
 * same (request, generation) again is a no-op, like a BullMQ job with a deterministic id.
 * There is no other owner to take a crashed run over, so an engine that throws ends its
 * generation `internal` (with ErrorDetails) here.
 *
 * At most `concurrency` generations run at once (GATEWAY_WORKER_CONCURRENCY, as a distributed
 * worker's); later ones wait in order for a slot, and `admit()` refuses a new run while
 * `maxWaitingRuns` or more wait (GATEWAY_MAX_WAITING_RUNS; 0: no limit), as the distributed
 * dispatcher does, so an overloaded process answers at once instead of letting every stream
 * fall behind.
 */
export function createInProcessDispatcher(
  engine: RunEngine,
  bus: Bus,
  logger: Logger,
  /** `dedupeWindowMs`: how long a started generation's key is kept so late duplicate dispatches stay no-ops. */
  opts: { dedupeWindowMs: number; concurrency?: number; maxWaitingRuns?: number },
): RunDispatcher & { idle(): Promise<void>; close(): Promise<void>; counts(): { active: number; waiting: number } } {
  const started = new Set<string>();
  const running = new Set<Promise<void>>();
  const waiting: (() => void)[] = [];
  const concurrency = Math.max(1, opts.concurrency ?? Number.POSITIVE_INFINITY);
  const controller = new AbortController();
  const start = (ref: RequestRef, generation: number, trace: TraceCarrier, key: string) => {
    const p = engine
      .runGeneration(ref, generation, controller.signal, { trace })
      .catch(async (err: unknown) => {
        logger.error({ err, requestId: ref.requestId, generation }, "run crashed");
        await endFailedGeneration(bus, ref, generation, failedRunError(err)).catch((e: unknown) => logger.error({ err: e, requestId: ref.requestId }, "could not end a crashed run"));
      })
      .finally(() => {
        running.delete(p);
        // Keep the key a while so late duplicate dispatches stay no-ops, then forget it.
        setTimeout(() => started.delete(key), opts.dedupeWindowMs).unref();
        if (!controller.signal.aborted) waiting.shift()?.();
      });
    running.add(p);
  };
  return {
    async dispatch(ref: RequestRef, generation: number, trace: TraceCarrier) {
      const key = `${ref.tenantId}\u0000${ref.requestId}\u0000${generation}`;
      if (started.has(key) || controller.signal.aborted) return;
      started.add(key);
      if (running.size < concurrency) start(ref, generation, trace, key);
      else waiting.push(() => start(ref, generation, trace, key));
    },
    async admit() {
      const limit = opts.maxWaitingRuns ?? 0;
      return limit > 0 && waiting.length >= limit ? { waiting: waiting.length, limit } : undefined;
    },
    /** Generations running and waiting for a slot (`byok_queue_depth`). */
    counts: () => ({ active: running.size, waiting: waiting.length }),
    async idle() {
      while (running.size > 0) await Promise.all([...running]);
    },
    async close() {
      controller.abort();
      // Runs that never started stay unended, as the runs this shutdown interrupts.
      waiting.length = 0;
      await Promise.all([...running]);
    },
  };
}
