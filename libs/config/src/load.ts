import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import {
  ConfigFileSchema, DistributedSchema, LimitsSchema, TimersSchema, type ConfigFile, type DistributedConfig, type Limits, type Timers,
} from "./schema.js";
import { ControlPlaneEnvSchema, controlPlaneOf, type ControlPlaneConfig } from "./control-plane.js";
import { parseTelemetryConfig, TelemetryEnvSchema, type TelemetryConfig } from "./telemetry.js";

export type Mode = "embedded" | "distributed";

export type StoreConfig =
  | { driver: "pglite"; dataDir: string | undefined }
  | { driver: "postgres"; url: string; schema?: string };

/** The validated configuration of one gateway process. Built once at start-up by loadConfig. */
export interface GatewayConfig {
  mode: Mode;
  host: string;
  port: number;
  /** GATEWAY_NAME: this replica's name, the prefix of its Redis client names (default: the kind and a random id). */
  name: string | undefined;
  /** Tenant every request belongs to until tenancy exists. */
  defaultTenant: string;
  timers: Timers;
  limits: Limits;
  store: StoreConfig;
  redisUrl: string | undefined;
  /** Redis bus, run queue and worker settings (distributed mode; the embedded gateway uses workerConcurrency and maxWaitingRuns). */
  distributed: DistributedConfig;
  /** Client-sent base URLs on loopback/private/link-local addresses are allowed (embedded default). */
  allowPrivateBaseUrls: boolean;
  /** Optional allow-list of client base URL hosts; empty = any public host. */
  baseUrlAllowList: string[];
  /** Web search backend (GET url?q=…); undefined = web search is disabled by policy. */
  webSearchUrl: string | undefined;
  file: ConfigFile;
  /** Gateway authentication (issue 6): open (embedded default, loopback only), api_key (distributed default), trusted_header. */
  auth: AuthConfig;
  /** GATEWAY_KEK: base64 of 32 bytes (validated shape). Secret. Embedded mode without it generates one into the data dir. */
  kek: string | undefined;
  /** GATEWAY_ADMIN_KEY (≥ 16 chars): enables the admin API. Secret. */
  adminKey: string | undefined;
  /** Tokens, agent transport, catalogue defaults, TLS (issue 11). */
  controlPlane: ControlPlaneConfig;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  /** Tracing (standard OTEL_* variables) and metric label settings. */
  telemetry: TelemetryConfig;
}

export type AuthModeName = "open" | "api_key" | "trusted_header";

export interface AuthConfig {
  mode: AuthModeName;
  /** GATEWAY_TRUSTED_HEADER_SECRET (trusted_header mode, ≥ 16 chars). Secret. */
  trustedHeaderSecret: string | undefined;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");

const EnvSchema = z.object({
  GATEWAY_MODE: z.enum(["embedded", "distributed"]).optional(),
  GATEWAY_HOST: z.string().optional(),
  GATEWAY_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  GATEWAY_NAME: z.string().regex(/^[A-Za-z0-9._-]+$/, "letters, digits, '.', '_' and '-' only").max(100).optional(),
  GATEWAY_DEFAULT_TENANT: z.string().min(1).default("default"),
  GATEWAY_CONFIG_FILE: z.string().optional(),
  GATEWAY_DATA_DIR: z.string().optional(),
  DATABASE_URL: z.string().optional(),
  REDIS_URL: z.string().optional(),
  GATEWAY_ALLOW_PRIVATE_BASE_URLS: bool.optional(),
  GATEWAY_BASE_URL_ALLOW_LIST: z.string().optional(),
  GATEWAY_WEB_SEARCH_URL: z.string().url().optional(),
  GATEWAY_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  GATEWAY_ROUTES_JSON: z.string().optional(),
  /** Postgres schema of the store (tests isolate themselves with one each). */
  GATEWAY_DATABASE_SCHEMA: z.string().regex(/^[a-z_][a-z0-9_]*$/).max(63).optional(),
  GATEWAY_AUTH_MODE: z.enum(["open", "api_key", "trusted_header"]).optional(),
  // Secrets: validated by shape only; messages never echo the value.
  GATEWAY_TRUSTED_HEADER_SECRET: z.string().min(16, "must be at least 16 characters").optional(),
  GATEWAY_KEK: z
    .string()
    .refine((v) => /^[A-Za-z0-9+/]+={0,2}$/.test(v.trim()) && Buffer.from(v.trim(), "base64").length === 32, "must be base64 of exactly 32 bytes")
    .optional(),
  GATEWAY_ADMIN_KEY: z.string().min(16, "must be at least 16 characters").optional(),
});

/** Every environment variable loadConfig reads (deployment files are checked against it for typos). */
export function configEnvNames(): string[] {
  const fields = [TimersSchema, LimitsSchema, DistributedSchema].flatMap((s) => Object.keys(s.shape).map(envName));
  return [...Object.keys(EnvSchema.shape), ...Object.keys(ControlPlaneEnvSchema.shape), ...Object.keys(TelemetryEnvSchema.shape), ...fields];
}

/** Environment variable for each timer / limit field, e.g. heartbeatMs → GATEWAY_HEARTBEAT_MS. */
export function envName(field: string): string {
  return "GATEWAY_" + field.replace(/[A-Z]/g, (c) => "_" + c).toUpperCase();
}

function pick(env: Record<string, string | undefined>, shape: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(shape)) {
    const v = env[envName(k)];
    if (v !== undefined && v !== "") out[k] = v;
  }
  return out;
}

function formatIssues(where: string, e: z.ZodError): string {
  return `${where}: ` + e.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
}

/**
 * Parses and validates the configuration from the environment (and the optional config file)
 * once at start-up. Throws ConfigError with every problem listed, never a partial config.
 */
export function loadConfig(
  env: Record<string, string | undefined>,
  defaults: { mode: Mode } = { mode: "embedded" },
): GatewayConfig {
  const e = EnvSchema.safeParse(env);
  if (!e.success) throw new ConfigError(formatIssues("environment", e.error));
  const mode = e.data.GATEWAY_MODE ?? defaults.mode;

  const timers = TimersSchema.safeParse(pick(env, TimersSchema.shape));
  if (!timers.success) throw new ConfigError(formatIssues("timers", timers.error));
  const limits = LimitsSchema.safeParse(pick(env, LimitsSchema.shape));
  if (!limits.success) throw new ConfigError(formatIssues("limits", limits.error));

  const cp = ControlPlaneEnvSchema.safeParse(env);
  if (!cp.success) throw new ConfigError(formatIssues("environment", cp.error));
  let controlPlane: ControlPlaneConfig;
  try {
    controlPlane = controlPlaneOf(cp.data);
  } catch (err) {
    throw new ConfigError(`environment: ${(err as Error).message}`);
  }

  const distributed = DistributedSchema.safeParse(pick(env, DistributedSchema.shape));
  if (!distributed.success) throw new ConfigError(formatIssues("distributed", distributed.error));

  let rawFile: unknown = {};
  if (e.data.GATEWAY_CONFIG_FILE) {
    const path = resolve(e.data.GATEWAY_CONFIG_FILE);
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (err) {
      throw new ConfigError(`config file ${path} cannot be read: ${(err as Error).message}`);
    }
    try {
      rawFile = path.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
    } catch (err) {
      throw new ConfigError(`config file ${path} is not valid ${path.endsWith(".json") ? "JSON" : "YAML"}: ${(err as Error).message}`);
    }
  }
  const file = ConfigFileSchema.safeParse(rawFile ?? {});
  if (!file.success) throw new ConfigError(formatIssues("config file", file.error));
  if (e.data.GATEWAY_ROUTES_JSON) {
    let extra: unknown;
    try {
      extra = JSON.parse(e.data.GATEWAY_ROUTES_JSON);
    } catch {
      throw new ConfigError("GATEWAY_ROUTES_JSON is not valid JSON");
    }
    const routes = ConfigFileSchema.shape.routes.safeParse(extra);
    if (!routes.success) throw new ConfigError(formatIssues("GATEWAY_ROUTES_JSON", routes.error));
    // Routes from the environment win over the file for the model ids they name.
    const names = new Set(routes.data.map((r) => r.modelId));
    file.data.routes = [...file.data.routes.filter((r) => !names.has(r.modelId)), ...routes.data];
  }
  for (const r of file.data.routes) {
    for (const t of r.targets) {
      if (t.apiKeyEnv && !env[t.apiKeyEnv]) {
        throw new ConfigError(`route ${r.modelId}: environment variable ${t.apiKeyEnv} (apiKeyEnv) is not set`);
      }
    }
  }

  let store: StoreConfig;
  if (mode === "distributed") {
    if (!e.data.DATABASE_URL) throw new ConfigError("distributed mode needs DATABASE_URL");
    if (!e.data.REDIS_URL && !distributed.data.redisClusterNodes) {
      throw new ConfigError("distributed mode needs REDIS_URL (or GATEWAY_REDIS_CLUSTER_NODES)");
    }
    store = { driver: "postgres", url: e.data.DATABASE_URL };
  } else {
    store = e.data.DATABASE_URL
      ? { driver: "postgres", url: e.data.DATABASE_URL }
      : { driver: "pglite", dataDir: e.data.GATEWAY_DATA_DIR ?? resolve(".data/pglite") };
  }

  if (store.driver === "postgres" && e.data.GATEWAY_DATABASE_SCHEMA) store.schema = e.data.GATEWAY_DATABASE_SCHEMA;

  const authMode: AuthModeName = e.data.GATEWAY_AUTH_MODE ?? (mode === "embedded" ? "open" : "api_key");
  if (authMode === "open" && mode === "distributed") {
    throw new ConfigError("GATEWAY_AUTH_MODE=open is refused in distributed mode: use api_key or trusted_header");
  }
  if (mode === "distributed" && !e.data.GATEWAY_KEK) {
    const r = file.data.routes.find((r) => r.targets.some((t) => t.credentialsRef !== undefined || t.apiKey !== undefined));
    if (r) throw new ConfigError(`route ${r.modelId}: stored or inline credentials need GATEWAY_KEK (base64 of 32 bytes) in distributed mode`);
  }
  if (authMode === "trusted_header" && !e.data.GATEWAY_TRUSTED_HEADER_SECRET) {
    throw new ConfigError("GATEWAY_AUTH_MODE=trusted_header needs GATEWAY_TRUSTED_HEADER_SECRET (the authenticating proxy's shared secret, ≥ 16 characters)");
  }

  const telemetry = parseTelemetryConfig(env);
  if ("error" in telemetry) throw new ConfigError(telemetry.error);

  return {
    mode,
    host: e.data.GATEWAY_HOST ?? (mode === "embedded" ? "127.0.0.1" : "0.0.0.0"),
    port: e.data.GATEWAY_PORT ?? 8787,
    name: e.data.GATEWAY_NAME,
    defaultTenant: e.data.GATEWAY_DEFAULT_TENANT,
    timers: timers.data,
    limits: limits.data,
    store,
    redisUrl: e.data.REDIS_URL,
    distributed: distributed.data,
    allowPrivateBaseUrls: e.data.GATEWAY_ALLOW_PRIVATE_BASE_URLS ?? mode === "embedded",
    baseUrlAllowList: (e.data.GATEWAY_BASE_URL_ALLOW_LIST ?? "").split(",").map((s) => s.trim()).filter(Boolean),
    webSearchUrl: e.data.GATEWAY_WEB_SEARCH_URL,
    file: file.data,
    auth: { mode: authMode, trustedHeaderSecret: e.data.GATEWAY_TRUSTED_HEADER_SECRET },
    kek: e.data.GATEWAY_KEK?.trim(),
    adminKey: e.data.GATEWAY_ADMIN_KEY,
    controlPlane,
    logLevel: e.data.GATEWAY_LOG_LEVEL,
    telemetry,
  };
}
