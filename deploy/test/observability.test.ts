// The Grafana dashboards and Prometheus rules under deploy/ query only what the gateway exports:
// every PromQL expression is parsed with Prometheus' own grammar (lezer-promql), and every
// metric it selects, with every label it matches on, must be in the metric catalogue that
// libs/telemetry registers (read from the registry itself), a recording rule of alerts.yml, or
// Prometheus' own `up`. Each alert names a runbook section of docs/operations.md.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { parser } from "@prometheus-io/lezer-promql";
import { createMetrics } from "@byok/telemetry";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { ROOT } from "./repo.js";

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleFile {
  groups: { name: string; rules: Rule[] }[];
}
interface Dashboard {
  uid: string;
  title: string;
  panels: { title: string; datasource: { uid: string }; targets: { expr: string }[] }[];
}

const rules = (parseYaml(readFileSync(join(ROOT, "deploy/prometheus/alerts.yml"), "utf8")) as RuleFile).groups.flatMap((g) => g.rules);
const dashboardDir = join(ROOT, "deploy/grafana/dashboards");
const dashboards = readdirSync(dashboardDir)
  .filter((f) => f.endsWith(".json"))
  .map((f) => ({ file: f, ...(JSON.parse(readFileSync(join(dashboardDir, f), "utf8")) as Dashboard) }));

/** Every series name the gateway exposes, with the labels it can carry. */
function exportedSeries(): Map<string, Set<string>> {
  const series = new Map<string, Set<string>>();
  // Target labels Prometheus adds to every scraped series.
  const target = ["job", "instance"];
  // With every optional label on, so the label check knows all of them.
  const { registry } = createMetrics({ metricsTenantLabel: true });
  for (const m of registry.getMetricsAsArray()) {
    const { name, labelNames } = m as unknown as { name: string; labelNames?: string[] };
    const labels = [...(labelNames ?? []), ...target];
    const type = (m as unknown as { type?: string }).type;
    if (type === "histogram") {
      series.set(`${name}_bucket`, new Set([...labels, "le"]));
      series.set(`${name}_sum`, new Set(labels));
      series.set(`${name}_count`, new Set(labels));
    } else {
      series.set(name, new Set(labels));
    }
  }
  return series;
}

const catalogue = exportedSeries();
const known = new Map(catalogue);
known.set("up", new Set(["job", "instance"]));
for (const r of rules) if (r.record) known.set(r.record, new Set(["job", "instance"]));

/** Grafana variables become literals so Prometheus' grammar parses the query as Prometheus would run it. */
function withoutGrafanaVariables(expr: string): string {
  return expr.replace(/\$__(rate_interval|interval|range)/g, "5m").replace(/\$[A-Za-z_][A-Za-z0-9_]*/g, "1");
}

interface Selected {
  metric: string;
  labels: string[];
}

/** Parses one PromQL expression: the metrics it selects, their label matchers, its grouping labels. */
function analyse(expr: string): { errors: string[]; selected: Selected[]; grouping: string[] } {
  const text = withoutGrafanaVariables(expr);
  const errors: string[] = [];
  const selected: Selected[] = [];
  const grouping: string[] = [];
  parser.parse(text).iterate({
    enter(node) {
      if (node.type.isError) errors.push(`syntax error at ${node.from}: ${JSON.stringify(text.slice(Math.max(0, node.from - 20), node.to + 20))}`);
      if (node.name === "VectorSelector") {
        const id = node.node.getChild("Identifier");
        const matchers = node.node.getChild("LabelMatchers");
        const labels: string[] = [];
        matchers?.cursor().iterate((m) => {
          if (m.name === "LabelName") labels.push(text.slice(m.from, m.to));
        });
        if (id) selected.push({ metric: text.slice(id.from, id.to), labels });
      }
      if (node.name === "GroupingLabels") {
        node.node.cursor().iterate((m) => {
          if (m.name === "LabelName") grouping.push(text.slice(m.from, m.to));
        });
      }
    },
  });
  return { errors, selected, grouping };
}

const queries = [
  ...rules.map((r) => ({ where: `alerts.yml ${r.alert ?? r.record}`, expr: r.expr })),
  ...dashboards.flatMap((d) => d.panels.flatMap((p) => p.targets.map((t) => ({ where: `${d.file} "${p.title}"`, expr: t.expr })))),
];

describe("dashboards and alert rules query what the services export", () => {
  it("the catalogue read from libs/telemetry is the real one (GenAI, gateway and process metrics)", () => {
    for (const name of ["byok_run_sse_open", "byok_runs_active", "gen_ai_client_operation_time_to_first_chunk_seconds_bucket", "byok_process_cpu_seconds_total"]) {
      expect(catalogue.has(name), name).toBe(true);
    }
  });

  it("every query parses, and names only exported metrics and their labels", () => {
    expect(queries.length).toBeGreaterThan(30);
    const problems: string[] = [];
    for (const q of queries) {
      const { errors, selected, grouping } = analyse(q.expr);
      problems.push(...errors.map((e) => `${q.where}: ${e}`));
      if (selected.length === 0) problems.push(`${q.where}: selects no metric`);
      const labelsInScope = new Set<string>(["le"]);
      for (const s of selected) {
        const labels = known.get(s.metric);
        if (!labels) {
          problems.push(`${q.where}: ${s.metric} is not exported by the gateway`);
          continue;
        }
        for (const l of labels) labelsInScope.add(l);
        for (const l of s.labels) if (!labels.has(l)) problems.push(`${q.where}: ${s.metric} has no label ${l}`);
      }
      for (const l of grouping) if (!labelsInScope.has(l)) problems.push(`${q.where}: groups by ${l}, which none of its metrics carries`);
    }
    expect(problems).toEqual([]);
  });

  it("the checker itself refuses an unknown metric, an unknown label and a syntax error", () => {
    expect(known.has("byok_runs_total")).toBe(false);
    const bad = analyse('sum by (code) (rate(byok_runs_ended_total{end_code="ok"}[5m]))');
    expect(bad.selected).toEqual([{ metric: "byok_runs_ended_total", labels: ["end_code"] }]);
    expect(known.get("byok_runs_ended_total")!.has("end_code")).toBe(false);
    expect(analyse("sum(rate(byok_runs_ended_total[5m])").errors.length).toBeGreaterThan(0);
  });

  it("alerts cover errors, the overhead SLO, takeovers, the queue, Redis, Postgres and budgets, each with a severity and a runbook in docs/operations.md", () => {
    const alerts = rules.filter((r) => r.alert);
    expect(alerts.map((a) => a.alert)).toEqual(
      expect.arrayContaining([
        "ByokHighErrorRatio",
        "ByokOverheadSloFastBurn",
        "ByokOverheadSloSlowBurn",
        "ByokTakeovers",
        "ByokQueueBacklog",
        "ByokRedisUnavailable",
        "ByokPostgresUnavailable",
        "ByokBudgetsExhausted",
      ]),
    );
    const ops = readFileSync(join(ROOT, "docs/operations.md"), "utf8");
    const anchors = new Set([...ops.matchAll(/^#+\s+(.+)$/gm)].map((m) => m[1]!.trim().toLowerCase().replace(/[^a-z0-9 -]/g, "").replace(/ /g, "-")));
    for (const a of alerts) {
      expect(["page", "ticket"], a.alert).toContain(a.labels?.severity);
      const runbook = a.annotations?.runbook ?? "";
      expect(runbook, a.alert).toMatch(/^docs\/operations\.md#/);
      expect(anchors.has(runbook.split("#")[1]!), `${a.alert}: ${runbook}`).toBe(true);
    }
  });

  it("dashboards: overview, tenants, latency, Redis and queue; unique uids; every panel on the provisioned Prometheus datasource", () => {
    expect(dashboards.map((d) => d.uid).sort()).toEqual(["byok-latency", "byok-overview", "byok-redis-queue", "byok-tenants"]);
    const provisioned = parseYaml(readFileSync(join(ROOT, "deploy/grafana/provisioning/datasources/prometheus.yml"), "utf8")) as { datasources: { uid: string }[] };
    const uids = new Set(provisioned.datasources.map((d) => d.uid));
    for (const d of dashboards) for (const p of d.panels) expect(uids.has(p.datasource.uid), `${d.file} "${p.title}"`).toBe(true);
  });
});
