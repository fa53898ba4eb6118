import { createClient, defineScripts, replyArray, replyString, runScript, type RedisClient, type RedisTarget, type ScriptSpec } from "@byok/redis";
import type { RunQueueSettings } from "./types.js";

const releaseDeadWorkersScript: ScriptSpec<"registry" | "active" | "stalled", "keyPrefix" | "self", string[]> = {
  command: "byokReleaseDeadWorkers",
  lua: new URL("./lua/release-dead-workers.lua", import.meta.url),
  keys: ["registry", "active", "stalled"],
  args: ["keyPrefix", "self"],
  rest: false,
  decode(reply) {
    return replyArray(reply, this.command).map((v) => replyString(v, this.command));
  },
};

export interface WorkerPresenceConfig {
  redis: RedisTarget;
  queue: RunQueueSettings;
  /** The BullMQ worker's name (what its jobs record as processedBy). */
  workerName: string;
  /** How often this worker looks for registered workers whose presence subscription is gone. */
  checkMs: number;
  /** A command connection the checks run on (the worker's non-blocking queue connection). */
  commands: RedisClient;
  onError(err: Error): void;
  /** Called with the jobs of dead workers this check released (for logs and metrics). */
  onReleased(jobIds: string[]): void;
}

export interface WorkerPresence {
  /** Resolves once the presence subscription is live and this worker is registered. */
  ready(): Promise<void>;
  /** Clean shutdown: unregisters (no other worker releases anything), then closes the connection. */
  close(): Promise<void>;
}

/**
 * Fast failure detection for run workers (docs/distributed.md "Takeover"): each worker holds a
 * sharded subscription to its own presence channel on a dedicated connection, which Redis
 * drops the moment the process dies; every worker checks every `checkMs` for registered
 * workers without one and frees their runs for BullMQ's next stalled check
 * (lua/release-dead-workers.lua). A worker that hangs without dying (SIGSTOP, a partition that
 * keeps the socket open) is still found by its job locks expiring, as before.
 */
export function startWorkerPresence(config: WorkerPresenceConfig): WorkerPresence {
  const keyPrefix = `${config.queue.prefix}:${config.queue.name}:`;
  const channel = `${keyPrefix}presence:${config.workerName}`;
  const keys = { registry: `${keyPrefix}byok-workers`, active: `${keyPrefix}active`, stalled: `${keyPrefix}stalled` };
  const commands = config.commands;
  defineScripts(commands, [releaseDeadWorkersScript]);
  const target = config.redis;
  const name = `${config.workerName}:presence`;
  const sub: RedisClient = createClient(target, { connectionName: name, maxRetriesPerRequest: null }, { shardedSubscribers: true });
  sub.on("error", config.onError);
  let closed = false;
  let checking = false;

  const check = async () => {
    if (closed || checking) return;
    checking = true;
    try {
      const released = await runScript(commands, releaseDeadWorkersScript, { keys, args: { keyPrefix, self: config.workerName } });
      if (released.length > 0) config.onReleased(released);
    } catch (err) {
      config.onError(err instanceof Error ? err : new Error(String(err)));
    } finally {
      checking = false;
    }
  };
  const subscribed = sub.ssubscribe(channel).then(check);
  subscribed.catch(config.onError);
  const timer = setInterval(() => void check(), config.checkMs);
  timer.unref();

  return {
    ready: () => subscribed.then(() => undefined),
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      await commands.srem(keys.registry, config.workerName).catch(() => undefined);
      await sub.quit().catch(() => sub.disconnect());
    },
  };
}
