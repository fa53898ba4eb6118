import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, envName, loadAdminConfig, loadConfig } from "../src/index.js";

describe("loadConfig", () => {
  it("gives documented defaults in embedded mode", () => {
    const c = loadConfig({});
    expect(c.mode).toBe("embedded");
    expect(c.host).toBe("127.0.0.1");
    expect(c.timers.heartbeatMs).toBe(5000);
    expect(c.timers.notFoundWaitMs).toBe(30000);
    expect(c.timers.reconnectGraceMs).toBe(30000);
    expect(c.limits.seqnoWindow).toBe(256);
    expect(c.store.driver).toBe("pglite");
    expect(c.allowPrivateBaseUrls).toBe(true);
  });

  it("reads every timer from its environment variable", () => {
    expect(envName("heartbeatMs")).toBe("GATEWAY_HEARTBEAT_MS");
    const c = loadConfig({ GATEWAY_HEARTBEAT_MS: "50", GATEWAY_NOT_FOUND_WAIT_MS: "200" });
    expect(c.timers.heartbeatMs).toBe(50);
    expect(c.timers.notFoundWaitMs).toBe(200);
  });

  it("refuses bad values with a message naming the field", () => {
    expect(() => loadConfig({ GATEWAY_HEARTBEAT_MS: "soon" })).toThrow(/heartbeatMs/);
    expect(() => loadConfig({ GATEWAY_PORT: "70000" })).toThrow(ConfigError);
    expect(() => loadConfig({ GATEWAY_MODE: "distributed" })).toThrow(/DATABASE_URL/);
  });

  it("reads a replica's name from GATEWAY_NAME (none by default) and refuses one a Redis client name cannot carry", () => {
    expect(loadConfig({}).name).toBeUndefined();
    expect(loadConfig({ GATEWAY_NAME: "byok-worker-7d9f.x_1" }).name).toBe("byok-worker-7d9f.x_1");
    expect(() => loadConfig({ GATEWAY_NAME: "two words" })).toThrow(/GATEWAY_NAME/);
    expect(() => loadConfig({ GATEWAY_NAME: "" })).toThrow(/GATEWAY_NAME/);
  });

  it("reads the budget lease TTL (default 60 s) and refuses one outside 1 s – 1 h", () => {
    expect(loadConfig({}).timers.budgetLeaseTtlMs).toBe(60_000);
    expect(loadConfig({ GATEWAY_BUDGET_LEASE_TTL_MS: "15000" }).timers.budgetLeaseTtlMs).toBe(15_000);
    expect(() => loadConfig({ GATEWAY_BUDGET_LEASE_TTL_MS: "999" })).toThrow(/budgetLeaseTtlMs/);
    expect(() => loadConfig({ GATEWAY_BUDGET_LEASE_TTL_MS: "3600001" })).toThrow(/budgetLeaseTtlMs/);
  });

  it("reads the connection limit (default 30000) and refuses one that is not a positive integer up to 1,000,000", () => {
    expect(loadConfig({}).limits.maxConnections).toBe(30_000);
    expect(loadConfig({}).limits.listenBacklog).toBe(4_096);
    expect(loadConfig({}).limits.listenSockets).toBe(8);
    expect(loadConfig({ GATEWAY_LISTEN_SOCKETS: "1" }).limits.listenSockets).toBe(1);
    for (const bad of ["0", "65", "two"]) expect(() => loadConfig({ GATEWAY_LISTEN_SOCKETS: bad })).toThrow(/listenSockets/);
    expect(loadConfig({ GATEWAY_LISTEN_BACKLOG: "128" }).limits.listenBacklog).toBe(128);
    for (const bad of ["0", "65536", "many"]) expect(() => loadConfig({ GATEWAY_LISTEN_BACKLOG: bad })).toThrow(/listenBacklog/);
    expect(loadConfig({ GATEWAY_MAX_CONNECTIONS: "500" }).limits.maxConnections).toBe(500);
    for (const bad of ["0", "-1", "1.5", "many", "1000001"]) expect(() => loadConfig({ GATEWAY_MAX_CONNECTIONS: bad })).toThrow(/maxConnections/);
  });

  it("reads the read batch bound (default 4 MiB) and refuses one outside 64 KiB – 64 MiB", () => {
    expect(loadConfig({}).limits.readBatchBytes).toBe(4 * 1024 * 1024);
    expect(loadConfig({ GATEWAY_READ_BATCH_BYTES: "2097152" }).limits.readBatchBytes).toBe(2 * 1024 * 1024);
    for (const bad of ["65535", "67108865", "big"]) expect(() => loadConfig({ GATEWAY_READ_BATCH_BYTES: bad })).toThrow(/readBatchBytes/);
  });

  it("reads the ledger spool's bound and drain interval", () => {
    expect(loadConfig({}).limits.ledgerSpoolMaxRows).toBe(100_000);
    expect(loadConfig({}).timers.ledgerSpoolDrainMs).toBe(5_000);
    expect(loadConfig({ GATEWAY_LEDGER_SPOOL_MAX_ROWS: "0", GATEWAY_LEDGER_SPOOL_DRAIN_MS: "200" })).toMatchObject({ limits: { ledgerSpoolMaxRows: 0 }, timers: { ledgerSpoolDrainMs: 200 } });
    expect(() => loadConfig({ GATEWAY_LEDGER_SPOOL_MAX_ROWS: "-1" })).toThrow(/ledgerSpoolMaxRows/);
    expect(() => loadConfig({ GATEWAY_LEDGER_SPOOL_DRAIN_MS: "0" })).toThrow(/ledgerSpoolDrainMs/);
  });

  it("loads routes from a YAML file and lets GATEWAY_ROUTES_JSON win per model id", () => {
    const dir = mkdtempSync(join(tmpdir(), "cfg-"));
    const file = join(dir, "gateway.yaml");
    writeFileSync(
      file,
      "routes:\n  - modelId: gpt-x\n    targets:\n      - provider: openai-chat\n        model: a\n        apiKeyEnv: MY_KEY\n  - modelId: other\n    targets:\n      - provider: openai-chat\n        model: b\n",
    );
    const c = loadConfig({
      GATEWAY_CONFIG_FILE: file,
      MY_KEY: "k",
      GATEWAY_ROUTES_JSON: JSON.stringify([{ modelId: "gpt-x", targets: [{ provider: "anthropic", model: "c" }] }]),
    });
    expect(c.file.routes.map((r) => [r.modelId, r.targets[0]?.model])).toEqual([["other", "b"], ["gpt-x", "c"]]);
    expect(() => loadConfig({ GATEWAY_CONFIG_FILE: file })).toThrow(/MY_KEY/);
  });
});

describe("loadConfig: distributed settings", () => {
  it("has defaults that take a dead worker's run over within 2 s (presence check + one stalled check)", () => {
    const c = loadConfig({ GATEWAY_MODE: "distributed", DATABASE_URL: "postgres://x/y", REDIS_URL: "redis://r" });
    expect(c.distributed).toMatchObject({ redisKeyPrefix: "byok", queuePrefix: "{byok}", queueName: "runs", workerConcurrency: 256 });
    expect(c.distributed.deadWorkerCheckMs + c.distributed.stalledIntervalMs).toBeLessThanOrEqual(2_000);
    expect(c.distributed.lockDurationMs + c.distributed.stalledIntervalMs).toBeLessThanOrEqual(10_000);
  });

  it("reads queue, worker and cluster settings from the environment", () => {
    const c = loadConfig({
      GATEWAY_MODE: "distributed",
      DATABASE_URL: "postgres://x/y",
      GATEWAY_DATABASE_SCHEMA: "t_abc",
      GATEWAY_REDIS_CLUSTER_NODES: "127.0.0.1:7001, 127.0.0.1:7002",
      GATEWAY_QUEUE_PREFIX: "{t1}",
      GATEWAY_WORKER_CONCURRENCY: "500",
      GATEWAY_LOCK_DURATION_MS: "1000",
      GATEWAY_STALLED_INTERVAL_MS: "500",
    });
    expect(c.store).toEqual({ driver: "postgres", url: "postgres://x/y", schema: "t_abc" });
    expect(c.distributed.redisClusterNodes).toEqual(["127.0.0.1:7001", "127.0.0.1:7002"]);
    expect(c.distributed).toMatchObject({ queuePrefix: "{t1}", workerConcurrency: 500, lockDurationMs: 1000, stalledIntervalMs: 500 });
  });

  it("refuses a queue prefix that is not one hash tag", () => {
    expect(() => loadConfig({ GATEWAY_QUEUE_PREFIX: "byok" })).toThrow(/queuePrefix/);
    expect(() => loadConfig({ GATEWAY_REDIS_KEY_PREFIX: "{x}" })).toThrow(/redisKeyPrefix/);
  });

  it("parses the control plane: token key ring, lifetimes, transport; refuses bad keys and route catalogues without echoing secrets", () => {
    const k1 = Buffer.alloc(32, 1).toString("base64");
    const k2 = Buffer.alloc(48, 2).toString("base64");
    const c = loadConfig({ GATEWAY_TOKEN_KEYS: `new:${k1}, old:${k2}`, GATEWAY_ACCESS_TOKEN_TTL_S: "900", GATEWAY_AGENT_TRANSPORT: "http2" });
    expect(c.controlPlane.tokenKeys?.map((k) => [k.kid, k.secret.length])).toEqual([["new", 32], ["old", 48]]);
    expect(c.controlPlane).toMatchObject({ accessTokenTtlS: 900, refreshTokenTtlS: 604800, tokenKeyRecheckMs: 5000, agentTransport: "http2" });
    expect(loadConfig({}).controlPlane).toMatchObject({ tokenKeys: undefined, agentTransport: "http1", tls: undefined });
    const short = Buffer.alloc(16, 3).toString("base64");
    expect(() => loadConfig({ GATEWAY_TOKEN_KEYS: `a:${short}` })).toThrow(/at least 32 bytes/);
    expect(() => loadConfig({ GATEWAY_TOKEN_KEYS: `a:${short}` })).not.toThrow(new RegExp(short.replace(/[+/=]/g, ".")));
    expect(() => loadConfig({ GATEWAY_TOKEN_KEYS: `a:${k1},a:${k1}` })).toThrow(/listed twice/);
    expect(() => loadConfig({ GATEWAY_TOKEN_KEYS: k1 })).toThrow(/kid/);
    expect(() => loadConfig({ GATEWAY_TLS_CERT_FILE: "/x.pem" })).toThrow(/go together/);
    const routes = (catalogue: unknown) => JSON.stringify([{ modelId: "m", targets: [{ provider: "openai-chat", model: "m" }], catalogue }]);
    expect(loadConfig({ GATEWAY_ROUTES_JSON: routes({ displayName: "M", efforts: ["low", "high"], defaultEffort: "high" }) }).file.routes[0]?.catalogue).toMatchObject({ displayName: "M", aliases: [], thinking: false });
    expect(() => loadConfig({ GATEWAY_ROUTES_JSON: routes({ efforts: ["low"], defaultEffort: "high" }) })).toThrow(/defaultEffort/);
    expect(() => loadConfig({ GATEWAY_ROUTES_JSON: routes({ baseUrl: "https://x" }) })).toThrow(/catalogue/);
  });
});

describe("telemetry settings", () => {
  it("tracing is off unless an exporter or an OTLP endpoint is configured; OTEL_SDK_DISABLED wins", () => {
    expect(loadConfig({}).telemetry).toEqual({
      tracesExporter: "none", traceFile: undefined, metricsTenantLabel: false, metricsMaxModelLabels: 50, traceContentTenants: [],
    });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }).telemetry.tracesExporter).toBe("otlp");
    expect(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" }).telemetry.tracesExporter).toBe("otlp");
    expect(loadConfig({ OTEL_TRACES_EXPORTER: "console" }).telemetry.tracesExporter).toBe("console");
    expect(loadConfig({ OTEL_TRACES_EXPORTER: "otlp", OTEL_SDK_DISABLED: "true" }).telemetry.tracesExporter).toBe("none");
    const t = loadConfig({ GATEWAY_METRICS_TENANT_LABEL: "true", GATEWAY_METRICS_MAX_MODEL_LABELS: "7", GATEWAY_TRACE_CONTENT_TENANTS: "acme, globex" }).telemetry;
    expect(t).toMatchObject({ metricsTenantLabel: true, metricsMaxModelLabels: 7, traceContentTenants: ["acme", "globex"] });
  });

  it("refuses a bad telemetry variable, naming it", () => {
    expect(() => loadConfig({ OTEL_TRACES_EXPORTER: "zipkin" })).toThrow(/OTEL_TRACES_EXPORTER/);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL.*http\/protobuf/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER: "sometimes" })).toThrow(/OTEL_TRACES_SAMPLER/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER_ARG: "2" })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector" })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(() => loadConfig({ GATEWAY_METRICS_MAX_MODEL_LABELS: "0" })).toThrow(ConfigError);
  });
});
