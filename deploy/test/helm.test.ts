// The Helm chart, rendered without a helm binary by the real Go text/template engine (Go's own
// package compiled to WebAssembly, @evertdespiegeleer/go-template) for the default values and
// ci/production-values.yaml. The chart uses only text/template built-ins, so this is the engine
// Helm runs; what Helm adds around it (values merge, .Release/.Chart, one template set with
// _helpers.tpl) is done here the way Helm does it. Every rendered object is validated against
// the Kubernetes JSON schemas (kubernetes-models' OpenAPI schemas, prometheus-operator CRDs) and
// for unknown fields, the values against values.schema.json, and the processes' environment
// against libs/config.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { parse as renderGoTemplate } from "@evertdespiegeleer/go-template";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { configEnvNames, loadAdminConfig, loadConfig, TimersSchema } from "@byok/config";
import { createMetrics } from "@byok/telemetry";
import { PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule";
import { ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { Job } from "kubernetes-models/batch/v1/Job";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, parseAllDocuments } from "yaml";
import { rootType, unknownFields } from "./k8s-fields.js";
import { ROOT } from "./repo.js";

const CHART = join(ROOT, "helm/cursor-byok-gateway");
type Values = Record<string, unknown>;
type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: Record<string, unknown>; data?: Record<string, string>; stringData?: Record<string, string> } & Record<string, unknown>;

/** Kubernetes schema of each kind the chart may render. */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  "apps/v1/Deployment": Deployment,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "batch/v1/Job": Job,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "v1/ServiceAccount": ServiceAccount,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
  "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule,
};

const isMap = (v: unknown): v is Values => typeof v === "object" && v !== null && !Array.isArray(v);

/** Helm's values coalescing: maps merge recursively, anything else from the override wins, null deletes. */
function mergeValues(base: Values, override: Values): Values {
  const out: Values = { ...base };
  for (const [k, v] of Object.entries(override)) {
    if (v === null) delete out[k];
    else if (isMap(v) && isMap(out[k])) out[k] = mergeValues(out[k], v);
    else out[k] = v;
  }
  return out;
}

function chartValues(overrideFile?: string): Values {
  const defaults = parseYaml(readFileSync(join(CHART, "values.yaml"), "utf8")) as Values;
  return overrideFile ? mergeValues(defaults, parseYaml(readFileSync(join(CHART, overrideFile), "utf8")) as Values) : defaults;
}

interface Rendered {
  objects: { template: string; object: K8sObject }[];
  notes: string;
}

/** `helm template byok . -n gateway [-f file]`: every template of the chart with the helpers defined. */
async function renderChart(values: Values): Promise<Rendered> {
  const chart = parseYaml(readFileSync(join(CHART, "Chart.yaml"), "utf8")) as { name: string; version: string; appVersion: string };
  const context = {
    Values: values,
    Release: { Name: "byok", Namespace: "gateway", Service: "Helm", IsInstall: true, IsUpgrade: false, Revision: 1 },
    Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion },
  };
  const dir = join(CHART, "templates");
  const files = readdirSync(dir).sort();
  const helpers = files.filter((f) => f.startsWith("_")).map((f) => readFileSync(join(dir, f), "utf8")).join("\n");
  const objects: Rendered["objects"] = [];
  let notes = "";
  for (const f of files.filter((f) => !f.startsWith("_"))) {
    const text = await renderGoTemplate(helpers + readFileSync(join(dir, f), "utf8"), context);
    if (f === "NOTES.txt") {
      notes = text;
      continue;
    }
    for (const doc of parseAllDocuments(text)) {
      expect(doc.errors, `${f}: ${doc.errors.join("; ")}\n${text}`).toEqual([]);
      const object = doc.toJS() as K8sObject | null;
      if (object !== null) objects.push({ template: f, object });
    }
  }
  return { objects, notes };
}

function valuesValidator() {
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats.default(ajv);
  return ajv.compile(JSON.parse(readFileSync(join(CHART, "values.schema.json"), "utf8")) as object);
}

const find = (r: Rendered, kind: string, suffix: string) => {
  const hit = r.objects.find((o) => o.object.kind === kind && o.object.metadata.name.endsWith(suffix));
  if (!hit) throw new Error(`no ${kind} *${suffix}`);
  return hit.object;
};
type PodSpec = { containers: Container[]; terminationGracePeriodSeconds?: number; securityContext: Record<string, unknown>; topologySpreadConstraints?: unknown[] };
type Container = {
  name: string;
  args: string[];
  env?: { name: string; value?: string }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  securityContext: Record<string, unknown>;
  resources?: Record<string, unknown>;
  startupProbe?: unknown;
  readinessProbe?: unknown;
  livenessProbe?: unknown;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
};
const podSpec = (o: K8sObject) => (o.spec as { template: { spec: PodSpec; metadata: { labels: Record<string, string> } } }).template;

const cases = [
  { name: "default values", file: undefined },
  { name: "ci/production-values.yaml", file: "ci/production-values.yaml" },
] as const;

describe.each(cases)("helm chart with $name", ({ file }) => {
  const values = chartValues(file);
  let rendered: Rendered;
  beforeAll(async () => {
    rendered = await renderChart(values);
  }, 60_000);

  it("the values pass values.schema.json", () => {
    const validate = valuesValidator();
    expect(validate(values), JSON.stringify(validate.errors, null, 2)).toBe(true);
  });

  it("every rendered object is valid under its Kubernetes JSON schema", () => {
    expect(rendered.objects.length).toBeGreaterThan(8);
    for (const { template, object } of rendered.objects) {
      const Model = MODELS[`${object.apiVersion}/${object.kind}`];
      expect(Model, `${template}: unexpected ${object.apiVersion} ${object.kind}`).toBeDefined();
      expect(() => new Model!(object as never).validate(), `${template}: ${object.kind} ${object.metadata.name}`).not.toThrow();
    }
    // No field the API server would drop as unknown (CRDs, whose specs are inline types, aside).
    const unknown = rendered.objects.flatMap(({ template, object }) => {
      const type = rootType(object.apiVersion, object.kind);
      return type ? unknownFields(object, type).map((f) => `${template}: ${object.kind} ${object.metadata.name}${f}`) : [];
    });
    expect(unknown).toEqual([]);
    const names = rendered.objects.map((o) => `${o.object.kind}/${o.object.metadata.name}`);
    expect(new Set(names).size).toBe(names.length);
    expect(rendered.notes).toContain("byok-cursor-byok-gateway-ingress.gateway.svc");
  });

  it("Deployments for ingress, worker and admin run the image's processes non-root on a read-only root, with probes and resources", () => {
    for (const component of ["ingress", "worker", "admin"]) {
      const tpl = podSpec(find(rendered, "Deployment", `-${component}`));
      expect(tpl.metadata.labels["app.kubernetes.io/component"]).toBe(component);
      expect(tpl.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
      const [c] = tpl.spec.containers;
      expect(c!.args).toEqual([component]);
      expect(c!.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } });
      expect(c!.startupProbe && c!.readinessProbe && c!.livenessProbe, component).toBeTruthy();
      expect(c!.resources).toHaveProperty("requests");
      if (component !== "admin") expect(tpl.spec.topologySpreadConstraints?.length).toBe(2);
    }
  });

  it("ingress drain timing: terminationGracePeriodSeconds covers the preStop pause, GATEWAY_DRAIN_GRACE_MS and GATEWAY_SHUTDOWN_TIMEOUT_MS", () => {
    const spec = podSpec(find(rendered, "Deployment", "-ingress")).spec;
    const c = spec.containers[0]!;
    const drainMs = Number(c.env!.find((e) => e.name === "GATEWAY_DRAIN_GRACE_MS")!.value);
    const preStop = c.lifecycle!.preStop!.exec!.command;
    expect(preStop[0]).toBe("sleep");
    expect(drainMs).toBeGreaterThanOrEqual(1000);
    // The chart leaves GATEWAY_SHUTDOWN_TIMEOUT_MS at its default: a stuck close ends by the process's own exit, not a SIGKILL.
    const closeMs = Number(c.env!.find((e) => e.name === "GATEWAY_SHUTDOWN_TIMEOUT_MS")?.value ?? TimersSchema.parse({}).shutdownTimeoutMs);
    expect(spec.terminationGracePeriodSeconds! * 1000).toBeGreaterThanOrEqual(Number(preStop[1]) * 1000 + drainMs + closeMs);
  });

  it("HPAs scale on CPU and on the telemetry catalogue's open streams (ingress) and active runs (workers)", () => {
    const exported = new Set(createMetrics().registry.getMetricsAsArray().map((m) => (m as unknown as { name: string }).name));
    const expected = { ingress: "byok_run_sse_open", worker: "byok_runs_active" };
    for (const [component, metric] of Object.entries(expected)) {
      const hpa = find(rendered, "HorizontalPodAutoscaler", `-${component}`);
      const metrics = (hpa.spec as { metrics: { type: string; resource?: { name: string }; pods?: { metric: { name: string } } }[] }).metrics;
      expect(metrics.map((m) => m.resource?.name ?? m.pods?.metric.name)).toEqual(["cpu", metric]);
      expect(exported.has(metric), metric).toBe(true);
    }
  });

  it("PDBs and Services select the pods of their Deployment", () => {
    for (const component of ["ingress", "worker"]) {
      const labels = podSpec(find(rendered, "Deployment", `-${component}`)).metadata.labels;
      const pdb = find(rendered, "PodDisruptionBudget", `-${component}`);
      const svc = find(rendered, "Service", `-${component}`);
      for (const selector of [(pdb.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels, (svc.spec as { selector: Record<string, string> }).selector]) {
        expect(labels).toMatchObject(selector);
      }
    }
  });

  it("the migrations Job is a pre-install/pre-upgrade hook running `byok migrate` with DATABASE_URL from a Secret that exists at hook time", () => {
    const job = find(rendered, "Job", "-migrate");
    expect(job.metadata.annotations).toMatchObject({ "helm.sh/hook": "pre-install,pre-upgrade" });
    const c = (job.spec as { template: { spec: PodSpec } }).template.spec.containers[0]!;
    expect(c.args).toEqual(["migrate"]);
    const ref = (c.env![0] as unknown as { valueFrom: { secretKeyRef: { name: string; key: string } } }).valueFrom.secretKeyRef;
    expect(ref.key).toBe("DATABASE_URL");
    if (values.existingSecret) expect(ref.name).toBe(values.existingSecret);
    else {
      const hookSecret = find(rendered, "Secret", "-migrate");
      expect(hookSecret.metadata.name).toBe(ref.name);
      expect(Number(hookSecret.metadata.annotations!["helm.sh/hook-weight"])).toBeLessThan(Number(job.metadata.annotations!["helm.sh/hook-weight"]));
    }
  });

  it("each process's environment (ConfigMap + Secret + container env) passes the gateway's configuration schema", () => {
    const configMap = find(rendered, "ConfigMap", "cursor-byok-gateway").data ?? {};
    // The Secret's keys as an operator fills them (chart Secret, or the existing Secret's keys).
    const secret = {
      DATABASE_URL: "postgres://byok@postgres:5432/byok",
      REDIS_URL: "redis://redis:6379",
      GATEWAY_KEK: Buffer.alloc(32, 7).toString("base64"),
      GATEWAY_ADMIN_KEY: "an-admin-key-of-some-length",
      GATEWAY_TOKEN_KEYS: `k1:${Buffer.alloc(32, 9).toString("base64")}`,
      OPENAI_API_KEY: "sk-test",
      ANTHROPIC_API_KEY: "sk-ant-test",
    };
    const known = new Set([...configEnvNames(), "GATEWAY_ADMIN_HOST", "GATEWAY_ADMIN_PORT"]);
    for (const component of ["ingress", "worker", "admin"]) {
      const c = podSpec(find(rendered, "Deployment", `-${component}`)).spec.containers[0]!;
      const env: Record<string, string> = { ...secret, ...configMap };
      for (const e of c.env ?? []) env[e.name] = e.value ?? "pod-name";
      for (const k of Object.keys(env)) if (k.startsWith("GATEWAY_")) expect(known.has(k), `${component}: ${k}`).toBe(true);
      if (component === "admin") expect(loadAdminConfig(env).port).toBe(values.admin && (values.admin as { port: number }).port);
      else {
        // GATEWAY_CONFIG_FILE points into the routes ConfigMap's mount; read its rendered content instead.
        const routes = configMap.GATEWAY_CONFIG_FILE ? find(rendered, "ConfigMap", "-routes").data!["routes.json"]! : undefined;
        const config = loadConfig({ ...env, GATEWAY_CONFIG_FILE: undefined, ...(routes ? { GATEWAY_ROUTES_JSON: JSON.stringify((JSON.parse(routes) as { routes: unknown }).routes) } : {}) }, { mode: "distributed" });
        expect(config.mode).toBe("distributed");
        expect(config.controlPlane.tokenKeys?.map((k) => k.kid)).toEqual(["k1"]);
        expect(config.file.routes.length).toBe(((values.config as { routes: unknown[] }).routes ?? []).length);
      }
    }
  });
});

describe("helm chart: optional parts and guards", () => {
  it("production: ServiceMonitor selects the ingress, worker and admin Services' http port; PrometheusRule and dashboards equal deploy/", async () => {
    const r = await renderChart(chartValues("ci/production-values.yaml"));
    const sm = find(r, "ServiceMonitor", "cursor-byok-gateway").spec as { jobLabel: string; selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] };
    for (const component of ["ingress", "worker", "admin"]) {
      const svc = find(r, "Service", `-${component}`);
      expect(svc.metadata.labels).toMatchObject(sm.selector.matchLabels);
      expect(svc.metadata.labels![sm.jobLabel]).toBe(`byok-${component}`);
      expect((svc.spec as { ports: { name: string }[] }).ports.map((p) => p.name)).toContain(sm.endpoints[0]!.port);
    }
    const rule = find(r, "PrometheusRule", "cursor-byok-gateway");
    const source = parseYaml(readFileSync(join(ROOT, "deploy/prometheus/alerts.yml"), "utf8")) as { groups: unknown };
    expect(rule.spec, "stale chart copy: run node tools/chart-files.mjs").toEqual({ groups: source.groups });
    const dashDir = join(ROOT, "deploy/grafana/dashboards");
    for (const f of readdirSync(dashDir)) {
      const cm = find(r, "ConfigMap", `-dashboard-${f.replace(/\.json$/, "")}`);
      expect(cm.data![f], `stale chart copy of ${f}: run node tools/chart-files.mjs`).toBe(readFileSync(join(dashDir, f), "utf8"));
    }
    expect(r.objects.filter((o) => o.object.kind === "NetworkPolicy").length).toBe(3);
    expect(r.objects.some((o) => o.object.kind === "Secret" && !o.object.metadata.name.endsWith("-migrate"))).toBe(false);
  });

  it("a configuration change rolls every Deployment's pods (the byok/config pod annotation); the same values render the same pods; secrets stay out of it", async () => {
    const annotations = (r: Rendered) =>
      ["ingress", "worker", "admin"].map((c) => (podSpec(find(r, "Deployment", `-${c}`)) as unknown as { metadata: { annotations: Record<string, string> } }).metadata.annotations);
    const secret = "sk-never-in-an-annotation";
    const base = mergeValues(chartValues(), { podAnnotations: { team: "platform" }, secrets: { extra: { OPENAI_API_KEY: secret } } });
    const a = annotations(await renderChart(base));
    const again = annotations(await renderChart(base));
    const changed = annotations(await renderChart(mergeValues(base, { config: { env: { GATEWAY_WORKER_CONCURRENCY: "64" } } })));
    for (const [i, ann] of a.entries()) {
      expect(ann).toMatchObject({ team: "platform" });
      expect(ann["byok/config"]).toContain("authMode:api_key");
      expect(again[i]).toEqual(ann);
      expect(changed[i]!["byok/config"]).not.toBe(ann["byok/config"]);
      expect(changed[i]!["byok/config"]).toContain("GATEWAY_WORKER_CONCURRENCY:64");
      expect(JSON.stringify(ann)).not.toContain(secret);
    }
  });

  it("the chart's Secret carries GATEWAY_TOKEN_KEYS, and ingress and workers read that one Secret (one key ring, the workers' KEK and provider keys)", async () => {
    const ring = `k2:${Buffer.alloc(32, 3).toString("base64")},k1:${Buffer.alloc(40, 4).toString("base64")}`;
    const values = mergeValues(chartValues(), { secrets: { tokenKeys: ring, kek: Buffer.alloc(32, 7).toString("base64"), extra: { OPENAI_API_KEY: "sk-test" } } });
    expect(valuesValidator()(values)).toBe(true);
    const r = await renderChart(values);
    const secret = r.objects.find((o) => o.object.kind === "Secret" && !o.object.metadata.name.endsWith("-migrate"))!.object;
    expect(secret.stringData).toMatchObject({ GATEWAY_TOKEN_KEYS: ring, GATEWAY_KEK: values.secrets && (values.secrets as { kek: string }).kek, OPENAI_API_KEY: "sk-test" });
    for (const component of ["ingress", "worker"]) {
      const c = podSpec(find(r, "Deployment", `-${component}`)).spec.containers[0]!;
      expect(c.envFrom!.map((e) => e.secretRef?.name).filter(Boolean), component).toEqual([secret.metadata.name]);
    }
    const config = loadConfig({ ...secret.stringData, DATABASE_URL: "postgres://byok@postgres/byok", REDIS_URL: "redis://redis:6379" }, { mode: "distributed" });
    expect(config.controlPlane.tokenKeys?.map((k) => k.kid)).toEqual(["k2", "k1"]);
    expect(r.notes).not.toContain("secrets.tokenKeys");
    expect((await renderChart(chartValues())).notes).toContain("secrets.tokenKeys (GATEWAY_TOKEN_KEYS) is not set");
  });

  it("refuses a terminationGracePeriodSeconds shorter than the drain grace, and values the schema does not allow", async () => {
    const values = mergeValues(chartValues(), { ingress: { drainGraceSeconds: 60, terminationGracePeriodSeconds: 30 } });
    await expect(renderChart(values)).rejects.toThrow(/terminationGracePeriodSeconds must be at least/);
    const validate = valuesValidator();
    expect(validate(mergeValues(chartValues(), { ingress: { replicaz: 3 } }))).toBe(false);
    expect(validate(mergeValues(chartValues(), { secrets: { kek: "short" } }))).toBe(false);
    expect(validate(mergeValues(chartValues(), { secrets: { tokenKeys: "k1:short" } }))).toBe(false);
    expect(validate(mergeValues(chartValues(), { config: { authMode: "open" } }))).toBe(false);
  });

  it("the engine is Go's text/template (Go-specific formatting and errors), not a look-alike", async () => {
    expect(await renderGoTemplate('{{ printf "%T %q %v" .n .s .l }}', { n: 1, s: 'a"b', l: [1, 2] })).toBe('float64 "a\\"b" [1 2]');
    await expect(renderGoTemplate("{{ include \"x\" . }}", {})).rejects.toThrow(/function "include" not defined/);
  });

  it("a Kubernetes schema violation and a misspelt field are caught", () => {
    const bad = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x" }, spec: { replicas: "two", selector: {}, template: {} } };
    expect(() => new Deployment(bad as never).validate()).toThrow();
    const misspelt = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x" }, spec: { template: { spec: { containers: [{ name: "a", readinesProbe: {}, securityContext: { readOnlyRootFilesytem: true } }] } } } };
    expect(unknownFields(misspelt, rootType("apps/v1", "Deployment")!)).toEqual([
      ".spec.template.spec.containers[0].readinesProbe",
      ".spec.template.spec.containers[0].securityContext.readOnlyRootFilesytem",
    ]);
  });
});
