import { appendFileSync } from "node:fs";
import { startTelemetry, type Telemetry } from "./start.js";

/**
 * Tracing of a service process, chosen by environment:
 * - `GATEWAY_TRACE_FILE=<path>`: spans kept in memory and appended to the file as JSON lines
 *   (`{ service, traceId, spanId, parentSpanId, name, attributes, events }`) every 200 ms and at
 *   shutdown. For tests that follow one trace across processes and scan what spans carry.
 * - `OTEL_EXPORTER_OTLP_ENDPOINT`: OTLP/HTTP export.
 * - otherwise spans are created and propagated but not exported.
 */
export function startServiceTracing(service: string, env: Record<string, string | undefined>): Telemetry {
  const file = env.GATEWAY_TRACE_FILE;
  if (!file) {
    const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT;
    return startTelemetry({ serviceName: service, exporter: endpoint ? "otlp" : "none", ...(endpoint ? { otlpEndpoint: endpoint } : {}) });
  }
  const telemetry = startTelemetry({ serviceName: service, exporter: "memory" });
  const exporter = telemetry.exporter;
  const drain = () => {
    if (!exporter) return;
    const spans = exporter.getFinishedSpans();
    if (spans.length === 0) return;
    exporter.reset();
    const lines = spans.map((s) =>
      JSON.stringify({
        service,
        traceId: s.spanContext().traceId,
        spanId: s.spanContext().spanId,
        parentSpanId: s.parentSpanContext?.spanId,
        name: s.name,
        attributes: s.attributes,
        events: s.events.map((e) => ({ name: e.name, attributes: e.attributes ?? {} })),
      }),
    );
    appendFileSync(file, lines.join("\n") + "\n");
  };
  const timer = setInterval(drain, 200);
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
