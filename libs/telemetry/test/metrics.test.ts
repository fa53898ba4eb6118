import { readFileSync } from "node:fs";
import { register as globalRegistry } from "prom-client";
import { describe, expect, it } from "vitest";
import { boundedLabel, createMetrics, metricsHandler } from "../src/index.js";

const CATALOGUE = new URL("../../../docs/observability.md", import.meta.url);

/** Metric names in the registry (without the _bucket/_sum/_count series suffixes). */
async function namesOf(m: ReturnType<typeof createMetrics>): Promise<string[]> {
  return (await m.registry.getMetricsAsJSON()).map((x) => x.name).filter((n) => n.startsWith("byok_") || n.startsWith("gen_ai_"));
}

describe("createMetrics", () => {
  it("every gateway metric is documented in docs/observability.md, and every documented one exists", async () => {
    const m = createMetrics({ processMetrics: false });
    const names = await namesOf(m);
    const doc = readFileSync(CATALOGUE, "utf8");
    const documented = [...doc.matchAll(/^\| `((?:byok|gen_ai)_[a-z_]+)` \|/gm)].map((x) => x[1]!);
    expect(names.sort()).toEqual([...new Set(documented)].sort());
  });

  it("lives on its own registry, process metrics included, nothing on prom-client's global one", async () => {
    const m = createMetrics();
    const text = await m.metrics();
    expect(text).toContain("byok_process_cpu_user_seconds_total");
    expect(text).toContain("# TYPE gen_ai_client_token_usage histogram");
    expect(await globalRegistry.metrics()).not.toContain("byok_");
  });

  it("two instances do not collide and the handler serves text exposition", async () => {
    const a = createMetrics({ processMetrics: false });
    const b = createMetrics({ processMetrics: false });
    a.framesDelivered.inc();
    const res = await metricsHandler(b)();
    expect(res.status).toBe(200);
    expect(res.contentType).toContain("text/plain");
    expect(res.body).toContain("byok_frames_delivered_total 0");
  });

  it("bounds label values: the tenant label only behind its flag, model and tenant names capped", () => {
    expect(createMetrics({ processMetrics: false }).tenantLabels("acme")).toEqual({});
    const m = createMetrics({ processMetrics: false, metricsTenantLabel: true, metricsMaxModelLabels: 2 });
    expect(m.tenantLabels("acme")).toEqual({ tenant: "acme" });
    expect([m.modelLabel("a"), m.modelLabel("b"), m.modelLabel("c"), m.modelLabel("a"), m.modelLabel(undefined)]).toEqual(["a", "b", "other", "a", "unknown"]);
    const cap = boundedLabel(1);
    expect([cap("x"), cap("y"), cap("x")]).toEqual(["x", "other", "x"]);
  });
});
