import type { Bus, RequestRef, RunDispatcher } from "@byok/bus";
import type { Logger, TraceCarrier } from "@byok/telemetry";
import { endFailedGeneration, failedRunError } from "./failed-run.js";
import type { RunEngine } from "./ports.js";

/**
 * Embedded mode's dispatcher: runs each generation in this process, once. Dispatching the
 * same (request, generation) again is a no-op, like a BullMQ job with a deterministic id.
 * There is no other owner to take a crashed run over, so an engine that throws ends its
 * generation `internal` (with ErrorDetails) here.
 */
export function createInProcessDispatcher(
  engine: RunEngine,
  bus: Bus,
  logger: Logger,
  /** `dedupeWindowMs`: how long a started generation's key is kept so late duplicate dispatches stay no-ops. */
  opts: { dedupeWindowMs: number },
): RunDispatcher & { idle(): Promise<void>; close(): Promise<void> } {
  const started = new Set<string>();
  const running = new Set<Promise<void>>();
  const controller = new AbortController();
  return {
    async dispatch(ref: RequestRef, generation: number, trace: TraceCarrier) {
      const key = `${ref.tenantId}\u0000${ref.requestId}\u0000${generation}`;
      if (started.has(key) || controller.signal.aborted) return;
      started.add(key);
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
        });
      running.add(p);
    },
    // Runs start in this process at once: none ever waits for a worker.
    admit: async () => undefined,
    async idle() {
      await Promise.all([...running]);
    },
    async close() {
      controller.abort();
      await Promise.all([...running]);
    },
  };
}
