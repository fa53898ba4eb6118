import { appendFileSync } from "node:fs";
import { SpanKind, type AttributeValue } from "@opentelemetry/api";
import { startTelemetry, type Telemetry } from "./start.js";

/** How a service process traces (the `telemetry` part of the validated gateway config). */
export interface ServiceTracingConfig {
  tracesExporter: "none" | "otlp" | "console";
  traceFile: string | undefined;
}

/** One finished span as written to a `GATEWAY_TRACE_FILE` (one JSON object a line). */
export interface SpanLine {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: keyof typeof SpanKind;
  attributes: Record<string, AttributeValue | undefined>;
  events: { name: string; attributes: Record<string, AttributeValue | undefined> }[];
  links: { traceId: string; spanId: string }[];
  status: { code: number; message?: string };
  startMs: number;
  endMs: number;
}

const NO_TRACING: Telemetry = { forceFlush: async () => {}, shutdown: async () => {} };

/**
 * Tracing of a service process, from its validated config:
 * - `traceFile`: spans kept in memory (scrubbed like every export) and appended to the file as
 *   {@link SpanLine}s every 100 ms and at shutdown, so tests follow one trace across processes
 *   and scan what spans carry;
 * - otherwise the `tracesExporter` the standard `OTEL_*` variables chose (`otlp`, `console`);
 * - `none`: the SDK is not started at all (the API stays a no-op: no spans, no cost).
 */
export function startServiceTracing(service: string, config: ServiceTracingConfig): Telemetry {
  const file = config.traceFile;
  if (!file) return config.tracesExporter === "none" ? NO_TRACING : startTelemetry({ serviceName: service, exporter: config.tracesExporter });
  const telemetry = startTelemetry({ serviceName: service, exporter: "memory" });
  const exporter = telemetry.exporter;
  const drain = () => {
    if (!exporter) return;
    const spans = exporter.getFinishedSpans();
    if (spans.length === 0) return;
    exporter.reset();
    const lines = spans.map((s) => {
      const line: SpanLine = {
        service,
        traceId: s.spanContext().traceId,
        spanId: s.spanContext().spanId,
        ...(s.parentSpanContext ? { parentSpanId: s.parentSpanContext.spanId } : {}),
        name: s.name,
        kind: SpanKind[s.kind] as keyof typeof SpanKind,
        attributes: s.attributes,
        events: s.events.map((e) => ({ name: e.name, attributes: e.attributes ?? {} })),
        links: s.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
        status: s.status,
        startMs: s.startTime[0] * 1000 + s.startTime[1] / 1e6,
        endMs: s.endTime[0] * 1000 + s.endTime[1] / 1e6,
      };
      return JSON.stringify(line);
    });
    appendFileSync(file, lines.join("\n") + "\n");
  };
  const timer = setInterval(drain, 100);
  timer.unref();
  return {
    ...(exporter ? { exporter } : {}),
    async forceFlush() {
      await telemetry.forceFlush();
      drain();
    },
    async shutdown() {
      clearInterval(timer);
      await telemetry.forceFlush();
      drain();
      await telemetry.shutdown();
    },
  };
}
