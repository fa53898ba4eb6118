/**
 * The standalone admin service's configuration (services/admin), read once from the environment
 * at start-up.
 * Store: DATABASE_URL (+ GATEWAY_DATABASE_SCHEMA) → Postgres with the KEK from GATEWAY_KEK;
 * otherwise PGlite at GATEWAY_DATA_DIR (default .data/pglite) with GATEWAY_KEK, or else the
 * KEK file generated into GATEWAY_KEK_DIR (default: the data dir's parent), as the embedded
 * gateway does. The store is opened the way every gateway process opens it (@byok/process). PGlite is single-process: run the
 * standalone admin against it only while the embedded gateway is stopped.
 */
import { dirname, resolve } from "node:path";
import { z } from "zod";
import type { StoreConfig } from "./load.js";
import { TimersSchema } from "./schema.js";
import { parseTelemetryConfig, type TelemetryConfig } from "./telemetry.js";

const Env = z.object({
  GATEWAY_ADMIN_KEY: z.string().min(16, "GATEWAY_ADMIN_KEY must be at least 16 characters"),
  GATEWAY_ADMIN_HOST: z.string().default("127.0.0.1"),
  GATEWAY_ADMIN_PORT: z.coerce.number().int().min(0).max(65535).default(8081),
  DATABASE_URL: z.string().optional(),
  GATEWAY_DATABASE_SCHEMA: z.string().regex(/^[a-z_][a-z0-9_]*$/).max(63).optional(),
  GATEWAY_DATA_DIR: z.string().optional(),
  GATEWAY_KEK_DIR: z.string().optional(),
  GATEWAY_KEK: z.string().optional(),
  // The same setting, default and check as the gateway processes' own.
  GATEWAY_SHUTDOWN_TIMEOUT_MS: TimersSchema.shape.shutdownTimeoutMs,
});

/** Every environment variable loadAdminConfig reads. */
export const ADMIN_ENV_NAMES: readonly string[] = Object.keys(Env.shape);

export interface AdminConfig {
  adminKey: string;
  host: string;
  port: number;
  store: StoreConfig;
  /** GATEWAY_KEK (base64 of 32 bytes). Secret. Required with Postgres; with PGlite the file in `kekDir` is used when it is absent. */
  kek: string | undefined;
  /** Where the PGlite gateway generated its KEK file (the embedded gateway's data dir parent). */
  kekDir: string;
  /** Tracing (standard OTEL_* variables), as every gateway process reads it. */
  telemetry: TelemetryConfig;
  /** GATEWAY_SHUTDOWN_TIMEOUT_MS: a stop still closing after this long exits 1 (as the other processes do). */
  shutdownTimeoutMs: number;
}

/** Throws an Error listing the bad variables (names only, never values). */
export function loadAdminConfig(env: Record<string, string | undefined>): AdminConfig {
  const r = Env.safeParse(env);
  if (!r.success) throw new Error(`admin configuration: ${r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  const e = r.data;
  const telemetry = parseTelemetryConfig(env);
  if ("error" in telemetry) throw new Error(`admin configuration: ${telemetry.error}`);
  const dataDir = resolve(e.GATEWAY_DATA_DIR ?? ".data/pglite");
  return {
    adminKey: e.GATEWAY_ADMIN_KEY,
    host: e.GATEWAY_ADMIN_HOST,
    port: e.GATEWAY_ADMIN_PORT,
    store: e.DATABASE_URL
      ? { driver: "postgres", url: e.DATABASE_URL, ...(e.GATEWAY_DATABASE_SCHEMA ? { schema: e.GATEWAY_DATABASE_SCHEMA } : {}) }
      : { driver: "pglite", dataDir },
    kek: e.GATEWAY_KEK?.trim() || undefined,
    kekDir: resolve(e.GATEWAY_KEK_DIR ?? dirname(dataDir)),
    telemetry,
    shutdownTimeoutMs: e.GATEWAY_SHUTDOWN_TIMEOUT_MS,
  };
}
