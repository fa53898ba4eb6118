/**
 * Starts the admin API on node:http (the standalone admin process), plus the probe routes every
 * process serves (unauthenticated `GET /healthz`, `/readyz` — the store answers — and
 * `/metrics`) and the usage dashboard page under `/dashboard/` (its data comes from this API).
 */
import { createServer, type Server } from "node:http";
import { createAdminHandler, type AdminApiOptions } from "@byok/admin-api";
import { createDashboardHandler } from "@byok/dashboard";
import { closeServer, createProbeRoutes, kekFor, listen, openGatewayStore } from "@byok/process";
import { KEK_ENV, type GatewayStore } from "@byok/store";
import { createLogger, createMetrics, type GatewayMetrics, type Logger, type MetricsOptions } from "@byok/telemetry";
import type { AdminConfig } from "./config.js";

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

/**
 * Opens the store the way every gateway process does (@byok/process), always with a KEK since
 * the admin API seals credentials: GATEWAY_KEK, or with PGlite the key file the embedded
 * gateway generated into `kekDir`.
 */
export async function openAdminStore(config: Pick<AdminConfig, "store" | "kek" | "kekDir">): Promise<GatewayStore> {
  const kek = await kekFor(config, config.store.driver === "pglite" ? { dataDir: config.kekDir } : undefined);
  if (!kek) throw new Error(`${KEK_ENV} is not set (base64 of 32 random bytes)`);
  return openGatewayStore(config, kek);
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
