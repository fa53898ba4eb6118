import { ConfigError, loadConfig } from "@byok/config";
import { startWorkerService } from "./service.js";
import { startServiceTracing } from "@byok/telemetry";
import { exitIfStopStalls } from "@byok/process";

// A provider worker (distributed mode): `tsx services/worker/src/main.ts`.
// SIGTERM/SIGINT: stop taking jobs, hand running generations back to the queue, close.
try {
  const config = loadConfig(process.env, { mode: "distributed" });
  const tracing = startServiceTracing("worker", config.telemetry);
  const svc = await startWorkerService(config, { ...(config.name ? { name: config.name } : {}) });
  const d = config.distributed;
  svc.logger.info(
    { url: svc.url, name: svc.name, queue: `${d.queuePrefix}:${d.queueName}`, concurrency: d.workerConcurrency, lockDurationMs: d.lockDurationMs, stalledIntervalMs: d.stalledIntervalMs, deadWorkerCheckMs: d.deadWorkerCheckMs },
    "worker started",
  );
  // One machine-readable line for scripts and tests.
  console.log(`BYOK_READY worker ${svc.url} ${svc.name}`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    exitIfStopStalls(config.timers.shutdownTimeoutMs, (m) => svc.logger.error(m));
    svc.logger.info({ signal, running: svc.runWorker.running() }, "worker closing: handing running generations back to the queue");
    await svc.close();
    await tracing.shutdown();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`configuration error: ${err.message}`);
    process.exit(2);
  }
  throw err;
}
