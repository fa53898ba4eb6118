import type { IncomingMessage, ServerResponse } from "node:http";
import { createAdminHandler, type AdminApiOptions } from "@byok/admin-api";
import { createDashboardHandler } from "@byok/dashboard";
import { createProbeRoutes } from "@byok/process";
import type { GatewayMetrics, Logger } from "@byok/telemetry";

/**
 * The admin process's HTTP surface: the usage dashboard page under `/dashboard/` (its data
 * comes from this API), the probe routes every process serves (unauthenticated `GET /healthz`,
 * `/readyz` — the store answers — and `/metrics`; no key, no audit row), then the admin API.
 */
export function createAdminServiceHandler(
  opts: Omit<AdminApiOptions, "onAnswered"> & { metrics: GatewayMetrics; logger: Logger },
): (req: IncomingMessage, res: ServerResponse) => void {
  const { metrics, logger, ...api } = opts;
  const handle = createAdminHandler({ ...api, onAnswered: (route, status) => metrics.adminRequests.inc({ route, status: String(status) }) });
  const dashboard = createDashboardHandler({ adminApiBase: "" });
  const probes = createProbeRoutes({ metrics, logger, ready: async () => void (await api.store.migrations()) });
  return (req, res) => {
    if (dashboard(req, res) || probes(req, res)) return;
    void handle(req, res);
  };
}
