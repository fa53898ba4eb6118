import type { CompatHandler } from "@byok/compat";
import { createEdgeHandler, type EdgeDeps, type NodeHandler } from "@byok/edge";
import { createProbeRoutes, type ProbeDeps } from "@byok/process";

/**
 * An ingress replica's HTTP surface: the probe routes (not ready while draining), the
 * OpenAI-/Anthropic-compatible endpoints when configured, then the Connect edge.
 */
export function createIngressHandler(deps: EdgeDeps & Pick<ProbeDeps, "ready"> & { compat?: CompatHandler }): NodeHandler {
  const probes = createProbeRoutes({ ...deps, draining: () => deps.streams.isDraining });
  const edge = createEdgeHandler(deps);
  return (req, res) => {
    if (!probes(req, res) && !deps.compat?.(req, res)) edge(req, res);
  };
}
