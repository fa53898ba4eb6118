import { context, propagation, SpanStatusCode, trace } from "@opentelemetry/api";
import { afterAll, describe, expect, it } from "vitest";
import { createMemoryTracing, createSecretSet, extractTraceContext, GENAI_OPERATION, genAiSpanName, injectTraceContext, SPAN } from "../src/index.js";

const KEY = "sk-ant-api03-tracingSecretValue0123456789";
const PLAIN = "plain-registered-secret-value";

describe("memory tracing and trace-context carriers", () => {
  const secrets = createSecretSet();
  const tracing = createMemoryTracing({ secrets });
  afterAll(() => tracing.shutdown());

  it("carries the trace across a carrier (as the bus does) and links parent and child", async () => {
    const tracer = trace.getTracer("test");
    let carrier: Record<string, string> = {};
    await tracer.startActiveSpan(SPAN.bidiAppend, async (span) => {
      carrier = injectTraceContext();
      span.end();
    });
    expect(carrier.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

    // "Another process": only the carrier crosses.
    await context.with(extractTraceContext(carrier), async () => {
      const child = tracer.startSpan(SPAN.run);
      child.end();
    });
    const spans = tracing.exporter.getFinishedSpans();
    const parent = spans.find((s) => s.name === SPAN.bidiAppend)!;
    const child = spans.find((s) => s.name === SPAN.run)!;
    expect(child.spanContext().traceId).toBe(parent.spanContext().traceId);
    expect(child.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
  });

  it("extract of a missing or malformed carrier is a no-op", () => {
    const base = context.active();
    expect(extractTraceContext(undefined, base)).toBe(base);
    expect(trace.getSpanContext(extractTraceContext({ traceparent: "garbage" }, base))).toBeUndefined();
    expect(propagation.fields()).toContain("traceparent");
  });

  it("scrubs secrets from span names, attributes, status and exception events", () => {
    const release = secrets.register(PLAIN);
    const span = trace.getTracer("test").startSpan(genAiSpanName(GENAI_OPERATION.chat, PLAIN));
    span.setAttribute("byok.api_key", "anything");
    span.setAttribute("http.request.header.authorization", ["Bearer abcdefghijkl"]);
    span.setAttribute("note", `key ${KEY} and ${PLAIN}`);
    span.recordException(new Error(`rejected ${KEY}`));
    span.setStatus({ code: SpanStatusCode.ERROR, message: `failed with ${PLAIN}` });
    span.end();
    release();
    const done = tracing.exporter.getFinishedSpans().find((s) => s.name.startsWith(GENAI_OPERATION.chat))!;
    const dump = JSON.stringify({ name: done.name, attributes: done.attributes, events: done.events, status: done.status });
    expect(dump).not.toContain(KEY);
    expect(dump).not.toContain(PLAIN);
    expect(dump).not.toContain("abcdefghijkl");
    expect(dump).not.toContain("anything");
    expect(dump).toContain("[REDACTED]");
  });
});
