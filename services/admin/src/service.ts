/**
 * Starts the admin API on node:http (the standalone admin process), plus the probe routes every
 * process serves (unauthenticated `GET /healthz`, `/readyz` — the store answers — and
 * `/metrics`) and the usage dashboard page under `/dashboard/` (its data comes from this API).
 */
import { createServer, type Server } from "node:http";
import { createAdminHandler, type AdminApiOptions } from "@byok/admin-api";
import { createDashboardHandler } from "@byok/dashboard";
import { closeServer, createProbeRoutes, listen } from "@byok/process";
import { createLogger, createMetrics, type GatewayMetrics, type Logger, type MetricsOptions } from "@byok/telemetry";

export interface AdminServer {
  /** Base URL, e.g. http://127.0.0.1:8081 */
  url: string;
  server: Server;
  /** This process's metric registry (served on `/metrics`). */
  metrics: GatewayMetrics;
  close(): Promise<void>;
}

export interface AdminServerOptions extends Omit<AdminApiOptions, "onAnswered"> {
  host?: string;
  port?: number;
  /** Metric options of the process (process metrics on by default). */
  telemetry?: MetricsOptions;
  logger?: Logger;
}

export async function startAdminServer(opts: AdminServerOptions): Promise<AdminServer> {
  const metrics = createMetrics(opts.telemetry);
  const logger = opts.logger ?? createLogger({ service: "admin" });
  metrics.watchDependency("postgres", () => opts.store.migrations());
  const handle = createAdminHandler({ ...opts, onAnswered: (route, status) => metrics.adminRequests.inc({ route, status: String(status) }) });
  const dashboard = createDashboardHandler({ adminApiBase: "" });
  const probes = createProbeRoutes({ metrics, logger, ready: async () => void (await opts.store.migrations()) });
  const server = createServer((req, res) => {
    if (dashboard(req, res)) return;
    // Probes and the image's healthcheck: no key, no audit row.
    if (probes(req, res)) return;
    void handle(req, res);
  });
  const url = await listen(server, opts.host ?? "127.0.0.1", opts.port ?? 0);
  return { url, server, metrics, close: () => closeServer(server) };
}
