import type { IncomingMessage, ServerResponse } from "node:http";
import { metricsHandler, type GatewayMetrics, type Logger } from "@byok/telemetry";

export interface ProbeDeps {
  metrics: GatewayMetrics;
  logger: Logger;
  /** Readiness: resolves when the process's dependencies answer, rejects (503) otherwise. */
  ready(): Promise<void>;
  /** True while the process drains for shutdown: readiness fails first so no new work comes. */
  draining?(): boolean;
}

/**
 * The probe routes every process serves: GET /healthz (the process is up), /readyz (its
 * dependencies answer) and /metrics (Prometheus). Returns false for any other request.
 */
export function createProbeRoutes(deps: ProbeDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const metrics = metricsHandler(deps.metrics);
  return (req, res) => {
    if (req.method !== "GET") return false;
    const path = (req.url ?? "").split("?")[0];
    if (path === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
      return true;
    }
    if (path === "/readyz") {
      if (deps.draining?.()) {
        res.writeHead(503, { "content-type": "text/plain" }).end("draining\n");
        return true;
      }
      deps.ready().then(
        () => res.writeHead(200, { "content-type": "text/plain" }).end("ready\n"),
        (err: unknown) => {
          deps.logger.warn({ err }, "not ready");
          res.writeHead(503, { "content-type": "text/plain" }).end("not ready\n");
        },
      );
      return true;
    }
    if (path === "/metrics") {
      void metrics().then((m) => res.writeHead(m.status, { "content-type": m.contentType }).end(m.body));
      return true;
    }
    return false;
  };
}
