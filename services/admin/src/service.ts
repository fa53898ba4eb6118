/**
 * The standalone admin process: the admin API, the usage dashboard and the probe routes
 * (handler.ts) on node:http.
 */
import { createServer, type Server } from "node:http";
import type { AdminApiOptions } from "@byok/admin-api";
import type { AdminConfig } from "@byok/config";
import { closeServer, kekFor, listen, openGatewayStore } from "@byok/process";
import { KEK_ENV, type GatewayStore } from "@byok/store";
import { createLogger, createMetrics, type GatewayMetrics, type Logger, type MetricsOptions } from "@byok/telemetry";
import { createAdminServiceHandler } from "./handler.js";

export interface AdminService {
  /** Base URL, e.g. http://127.0.0.1:8081 */
  url: string;
  server: Server;
  /** This process's metric registry (served on `/metrics`). */
  metrics: GatewayMetrics;
  close(): Promise<void>;
}

export interface AdminServiceOptions extends Omit<AdminApiOptions, "onAnswered"> {
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

export async function startAdminService(opts: AdminServiceOptions): Promise<AdminService> {
  const { host, port, telemetry, logger, ...api } = opts;
  const metrics = createMetrics(telemetry);
  metrics.watchDependency("postgres", () => api.store.migrations());
  const server = createServer(createAdminServiceHandler({ ...api, metrics, logger: logger ?? createLogger({ service: "admin" }) }));
  const url = await listen(server, host ?? "127.0.0.1", port ?? 0);
  return { url, server, metrics, close: () => closeServer(server) };
}
