// withSpan with tracing on (a recording span, active inside, ended, ERROR on a throw) and off
// (the API's no-op tracer: the function runs as it would inside a no-op span, no span active).
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { ATTR, createMemoryTracing, injectTraceContext, SPAN, withSpan } from "../src/index.js";

// Taken at module load, before any registration, as the services' tracers are.
const tracer = trace.getTracer("with-span-test");

describe("withSpan, tracing off (no tracer provider registered)", () => {
  it("runs the function with a no-op span, none active, and passes its result and its rejection through", async () => {
    const seen = await withSpan(tracer, SPAN.bidiAppend, { kind: SpanKind.SERVER, attributes: { [ATTR.requestId]: "r" } }, async (span) => {
      span.setAttribute(ATTR.appendOutcome, "accepted");
      return { recording: span.isRecording(), valid: trace.isSpanContextValid(span.spanContext()), active: trace.getActiveSpan(), carrier: injectTraceContext() };
    });
    expect(seen).toEqual({ recording: false, valid: false, active: undefined, carrier: {} });
    const failure = new Error("bus down");
    await expect(withSpan(tracer, SPAN.jobDispatch, {}, async () => Promise.reject(failure))).rejects.toBe(failure);
    // A function that throws before returning its promise still rejects (never throws synchronously).
    const sync = withSpan(tracer, SPAN.jobDispatch, {}, () => {
      throw failure;
    });
    await expect(sync).rejects.toBe(failure);
  });
});

describe("withSpan, tracing on", () => {
  it("makes the span active inside, nests children under it, ends it, and marks a throw ERROR with error.type", async () => {
    const tracing = createMemoryTracing();
    try {
      let carrier: Record<string, string> = {};
      await withSpan(tracer, SPAN.bidiAppend, { kind: SpanKind.SERVER, attributes: { [ATTR.requestId]: "r" } }, async (outer) => {
        expect(trace.getActiveSpan()).toBe(outer);
        await withSpan(tracer, SPAN.busAppendInput, { kind: SpanKind.PRODUCER }, async (inner) => {
          expect(trace.getActiveSpan()).toBe(inner);
          carrier = injectTraceContext();
        });
        expect(trace.getActiveSpan()).toBe(outer);
      });
      const failure = Object.assign(new Error("refused"), { code: 8 });
      await expect(withSpan(tracer, SPAN.jobDispatch, {}, () => Promise.reject(failure))).rejects.toBe(failure);
      expect(trace.getSpan(context.active())).toBeUndefined();

      const spans = tracing.exporter.getFinishedSpans();
      const outer = spans.find((s) => s.name === SPAN.bidiAppend)!;
      const inner = spans.find((s) => s.name === SPAN.busAppendInput)!;
      const failed = spans.find((s) => s.name === SPAN.jobDispatch)!;
      expect(outer).toMatchObject({ kind: SpanKind.SERVER, attributes: { [ATTR.requestId]: "r" }, status: { code: SpanStatusCode.UNSET } });
      expect(inner.parentSpanContext?.spanId).toBe(outer.spanContext().spanId);
      expect(inner.kind).toBe(SpanKind.PRODUCER);
      expect(carrier.traceparent).toBe(`00-${inner.spanContext().traceId}-${inner.spanContext().spanId}-01`);
      expect(failed.status).toEqual({ code: SpanStatusCode.ERROR, message: "8" });
      expect(failed.attributes[ATTR.errorType]).toBe("8");
      expect(failed.parentSpanContext).toBeUndefined();
    } finally {
      await tracing.shutdown();
    }
  });
});
