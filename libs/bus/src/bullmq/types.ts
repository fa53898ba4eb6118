import type { TraceCarrier } from "@byok/telemetry";

/** Data of one run job: which generation of which request to run. */
export interface RunJobData {
  tenantId: string;
  requestId: string;
  generation: number;
  /** W3C trace context of the BidiAppend that dispatched it (the worker's run span links to it). */
  trace: TraceCarrier;
}

/** BullMQ job name of run jobs. */
export const RUN_JOB_NAME = "run";

/** Queue settings shared by the dispatcher (producer) and the worker (consumer). */
export interface RunQueueSettings {
  /** Queue name (no `:`). */
  name: string;
  /**
   * BullMQ key prefix: one hash tag such as `{byok}`, so every key of the queue lives in one
   * Redis Cluster slot (docs/architecture.md property 8). Tests use a unique tag each.
   */
  prefix: string;
}

/** Checks a queue prefix: exactly one hash tag `{…}` without `:` inside. */
export function assertQueuePrefix(prefix: string): void {
  if (!/^\{[^{}:\s]+\}$/.test(prefix)) {
    throw new Error(`invalid queue prefix ${JSON.stringify(prefix)}: must be one hash tag like {byok}`);
  }
}

/** Checks a queue name: BullMQ joins prefix, name and id with `:`. */
export function assertQueueName(name: string): void {
  if (!/^[A-Za-z0-9_.-]+$/.test(name)) throw new Error(`invalid queue name ${JSON.stringify(name)}`);
}
