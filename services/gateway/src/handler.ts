import type { AdminHandler } from "@byok/admin-api";
import type { CompatHandler } from "@byok/compat";
import type { DashboardHandler } from "@byok/dashboard";
import { createEdgeHandler, type EdgeDeps, type NodeHandler } from "@byok/edge";
import { createProbeRoutes, type ProbeDeps } from "@byok/process";

/** Path prefix of the admin API on the embedded gateway's port (when GATEWAY_ADMIN_KEY is set). */
export const ADMIN_PATH_PREFIX = "/admin";

/**
 * The embedded gateway's HTTP surface: the admin API under /admin and the usage dashboard
 * under /dashboard/ (both only with GATEWAY_ADMIN_KEY), the probe routes, the
 * OpenAI-/Anthropic-compatible endpoints (`compat` answers false for paths it does not own),
 * then the Connect edge.
 */
export function createGatewayHandler(
  deps: EdgeDeps & Pick<ProbeDeps, "ready"> & { admin: AdminHandler | undefined; dashboard: DashboardHandler | undefined; compat: CompatHandler },
): NodeHandler {
  const probes = createProbeRoutes(deps);
  const edge = createEdgeHandler(deps);
  const { admin, dashboard } = deps;
  return (req, res) => {
    const path = req.url ?? "/";
    if (dashboard?.(req, res)) return;
    if (admin && (path === ADMIN_PATH_PREFIX || path.startsWith(`${ADMIN_PATH_PREFIX}/`))) {
      // The admin API under /admin on the same port: /admin/v1/tenants → /v1/tenants.
      req.url = path.slice(ADMIN_PATH_PREFIX.length) || "/";
      void admin(req, res);
      return;
    }
    if (probes(req, res) || deps.compat(req, res)) return;
    edge(req, res);
  };
}
