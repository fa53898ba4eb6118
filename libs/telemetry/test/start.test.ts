import { trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { injectTraceContext, SPAN, startTelemetry } from "../src/index.js";

describe("startTelemetry", () => {
  it("starts the Node SDK with the scrubbing processor and a memory exporter, then shuts down", async () => {
    const telemetry = startTelemetry({ serviceName: "byok-test", exporter: "memory" });
    try {
      const tracer = trace.getTracer("test");
      let carrier: Record<string, string> = {};
      tracer.startActiveSpan(SPAN.runSse, (span) => {
        span.setAttribute("note", "key sk-proj-abcdefghijklmnop1234");
        carrier = injectTraceContext();
        span.end();
      });
      expect(carrier.traceparent).toBeDefined();
      await telemetry.forceFlush();
      const spans = telemetry.exporter!.getFinishedSpans();
      expect(spans.map((s) => s.name)).toEqual([SPAN.runSse]);
      expect(spans[0]!.resource.attributes["service.name"]).toBe("byok-test");
      expect(spans[0]!.attributes.note).toBe("key [REDACTED]");
    } finally {
      await telemetry.shutdown();
    }
  });
});
