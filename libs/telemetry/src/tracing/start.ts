import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { BatchSpanProcessor, ConsoleSpanExporter, InMemorySpanExporter, SimpleSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace";
import { processSecrets, type SecretSet } from "../secrets/secret-set.js";
import { createScrubbingSpanProcessor } from "./scrub-processor.js";

export type TraceExporterKind = "otlp" | "console" | "memory";

export interface TelemetryOptions {
  /** `service.name` resource attribute, unless `OTEL_SERVICE_NAME` sets one. */
  serviceName: string;
  /**
   * `otlp`: OTLP/HTTP protobuf, configured by the standard `OTEL_EXPORTER_OTLP_*` variables.
   * `console`: spans printed to stdout. `memory`: an in-memory exporter returned as `exporter`
   * (synchronous export).
   */
  exporter: TraceExporterKind;
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
 * and the W3C trace-context + baggage propagator, all registered globally. The sampler
 * (`OTEL_TRACES_SAMPLER[_ARG]`) and the resource (`OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES`, host and process detectors) come from the standard variables,
 * read by the SDK. No auto instrumentation, no metrics or logs pipeline (metrics are
 * Prometheus, see `createMetrics`). The only place in the repository that touches the SDK;
 * libraries use `@opentelemetry/api`.
 */
export function startTelemetry(options: TelemetryOptions, env: Record<string, string | undefined> = process.env): Telemetry {
  const processors: SpanProcessor[] = [createScrubbingSpanProcessor(options.secrets ?? processSecrets)];
  let memory: InMemorySpanExporter | undefined;
  if (options.exporter === "otlp") {
    processors.push(new BatchSpanProcessor({ exporter: new OTLPTraceExporter() }));
  } else if (options.exporter === "console") {
    processors.push(new BatchSpanProcessor({ exporter: new ConsoleSpanExporter() }));
  } else {
    memory = new InMemorySpanExporter();
    processors.push(new SimpleSpanProcessor({ exporter: memory }));
  }
  const sdk = new NodeSDK({
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName: options.serviceName }),
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
