import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace";
import { processSecrets, type SecretSet } from "../secrets/secret-set.js";
import { createScrubbingSpanProcessor } from "./scrub-processor.js";

export type TraceExporterKind = "none" | "otlp" | "memory";

export interface TelemetryOptions {
  /** `service.name` resource attribute. */
  serviceName: string;
  /**
   * `none` (default): spans are created and trace context propagates, nothing is exported.
   * `otlp`: OTLP/HTTP protobuf to `otlpEndpoint` (or the standard `OTEL_EXPORTER_OTLP_*` settings).
   * `memory`: an in-memory exporter returned as `exporter` (synchronous export).
   */
  exporter?: TraceExporterKind;
  /** OTLP base URL, e.g. `http://collector:4318` (traces go to `/v1/traces`). */
  otlpEndpoint?: string;
  secrets?: SecretSet;
}

export interface Telemetry {
  /** Present when `exporter: "memory"`. */
  readonly exporter?: InMemorySpanExporter;
  /** Exports every span ended so far (resource detection may delay exports until it settles). */
  forceFlush(): Promise<void>;
  /** Flushes pending spans and shuts the SDK down; idempotent. */
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry Node SDK for a service process: the tracer provider with the
 * secret-scrubbing span processor ahead of the exporter, an AsyncLocalStorage context manager
 * and the W3C trace-context + baggage propagator, all registered globally. No auto
 * instrumentation, no metrics or logs pipeline (metrics are Prometheus, see `createMetrics`).
 * The only place in the repository that touches the SDK; libraries use `@opentelemetry/api`.
 */
export function startTelemetry(options: TelemetryOptions): Telemetry {
  const kind = options.exporter ?? "none";
  const processors: SpanProcessor[] = [createScrubbingSpanProcessor(options.secrets ?? processSecrets)];
  let memory: InMemorySpanExporter | undefined;
  if (kind === "otlp") {
    const url = options.otlpEndpoint ? `${options.otlpEndpoint.replace(/\/+$/, "")}/v1/traces` : undefined;
    processors.push(new BatchSpanProcessor({ exporter: new OTLPTraceExporter(url ? { url } : {}) }));
  } else if (kind === "memory") {
    memory = new InMemorySpanExporter();
    processors.push(new SimpleSpanProcessor({ exporter: memory }));
  }
  const sdk = new NodeSDK({
    serviceName: options.serviceName,
    spanProcessors: processors,
    textMapPropagator: new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
    instrumentations: [],
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  let done: Promise<void> | undefined;
  return {
    ...(memory ? { exporter: memory } : {}),
    async forceFlush() {
      await Promise.all(processors.map((p) => p.forceFlush()));
    },
    shutdown() {
      done ??= sdk.shutdown();
      return done;
    },
  };
}
