import type { IncomingMessage, ServerResponse } from "node:http";
import { createProbeRoutes } from "@byok/process";
import type { GatewayMetrics, Logger } from "@byok/telemetry";
import type { RunWorker } from "@byok/runtime";

/** A worker's HTTP surface: the probe routes only; ready while its BullMQ worker runs. */
export function createWorkerHandler(deps: { metrics: GatewayMetrics; logger: Logger; runWorker: RunWorker }) {
  const probes = createProbeRoutes({
    metrics: deps.metrics,
    logger: deps.logger,
    ready: async () => {
      if (!deps.runWorker.worker.isRunning()) throw new Error("the run worker is not running");
    },
  });
  return (req: IncomingMessage, res: ServerResponse): void => {
    if (!probes(req, res)) res.writeHead(404).end();
  };
}
