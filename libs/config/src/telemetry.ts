import { z } from "zod";

/**
 * Telemetry settings of a process (docs/observability.md). Traces follow the standard
 * OpenTelemetry variables, which the SDK itself reads (endpoint, headers, sampler, resource);
 * they are validated here so a typo stops the process instead of silently disabling tracing.
 * Tracing is off unless configured: no exporter chosen and no OTLP endpoint set.
 */
export interface TelemetryConfig {
  /** Where finished spans go: `none` (the SDK is not started), `otlp` (OTLP/HTTP protobuf) or `console`. */
  tracesExporter: "none" | "otlp" | "console";
  /** GATEWAY_TRACE_FILE: spans (with attributes) appended to this file as JSON lines, for tests across processes. */
  traceFile: string | undefined;
  /** GATEWAY_METRICS_TENANT_LABEL: add a `tenant` label to the per-tenant metrics (default off). */
  metricsTenantLabel: boolean;
  /** GATEWAY_METRICS_MAX_MODEL_LABELS: distinct model (and tenant) label values kept per process (default 50). */
  metricsMaxModelLabels: number;
  /**
   * GATEWAY_TRACE_CONTENT_TENANTS: tenants whose prompts and completions may enter their
   * provider-call spans (comma-separated ids; default none). Never for a run in privacy mode.
   */
  traceContentTenants: string[];
}

const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"] as const;

/** The variables parseTelemetryConfig reads (configEnvNames lists them). */
export const TelemetryEnvSchema = z.object({
  OTEL_SDK_DISABLED: bool.optional(),
  OTEL_TRACES_EXPORTER: z.enum(["otlp", "console", "none"], { message: "must be otlp, console or none" }).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
  // The gateway ships the OTLP/HTTP protobuf exporter only.
  OTEL_EXPORTER_OTLP_PROTOCOL: z.literal("http/protobuf", { message: "only http/protobuf is supported" }).optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.literal("http/protobuf", { message: "only http/protobuf is supported" }).optional(),
  OTEL_TRACES_SAMPLER: z.enum(SAMPLERS, { message: `must be one of ${SAMPLERS.join(", ")}` }).optional(),
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).optional(),
  GATEWAY_TRACE_FILE: z.string().min(1).optional(),
  GATEWAY_METRICS_TENANT_LABEL: bool.default(false),
  GATEWAY_METRICS_MAX_MODEL_LABELS: z.coerce.number().int().min(1).max(10_000).default(50),
  GATEWAY_TRACE_CONTENT_TENANTS: z.string().optional(),
});

/** Parses the telemetry variables; a bad one yields an error naming the field (loadConfig throws it as a ConfigError). */
export function parseTelemetryConfig(env: Record<string, string | undefined>): TelemetryConfig | { error: string } {
  const present = Object.fromEntries(Object.entries(env).filter(([k, v]) => v !== undefined && v !== "" && k in TelemetryEnvSchema.shape));
  const r = TelemetryEnvSchema.safeParse(present);
  if (!r.success) return { error: "telemetry: " + r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ") };
  const e = r.data;
  const endpoint = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? e.OTEL_EXPORTER_OTLP_ENDPOINT;
  const tracesExporter = e.OTEL_SDK_DISABLED ? "none" : (e.OTEL_TRACES_EXPORTER ?? (endpoint ? "otlp" : "none"));
  return {
    tracesExporter,
    traceFile: e.GATEWAY_TRACE_FILE,
    metricsTenantLabel: e.GATEWAY_METRICS_TENANT_LABEL,
    metricsMaxModelLabels: e.GATEWAY_METRICS_MAX_MODEL_LABELS,
    traceContentTenants: (e.GATEWAY_TRACE_CONTENT_TENANTS ?? "").split(",").map((s) => s.trim()).filter(Boolean),
  };
}
