import { context, INVALID_SPAN_CONTEXT, SpanStatusCode, trace, type Span, type SpanOptions, type Tracer } from "@opentelemetry/api";
import { ATTR } from "./span-names.js";

/**
 * Runs `fn` inside a new active span and ends it: a throw sets the span's status to ERROR with
 * `error.type` (the error's Connect `code` when it has one, else its class name) and rethrows.
 *
 * What `tracer.startActiveSpan` does, with one shortcut: a span that traces nothing (the API's
 * no-op tracer, tracing off, or suppressed) under a context that holds no span is not made
 * active. Every method of such a span is a no-op and its context is the invalid one, which
 * readers treat as no span (the log correlation, the propagator, a child span's parent), so
 * `fn` runs as it would inside it, without a context per call (a request's fixed cost).
 */
export function withSpan<T>(tracer: Tracer, name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = context.active();
  const span = tracer.startSpan(name, options, parent);
  if (span.spanContext() === INVALID_SPAN_CONTEXT && !span.isRecording() && trace.getSpan(parent) === undefined) {
    try {
      return fn(span);
    } catch (err) {
      return Promise.reject(err);
    }
  }
  return context.with(trace.setSpan(parent, span), () => ended(span, fn));
}

async function ended<T>(span: Span, fn: (span: Span) => Promise<T>): Promise<T> {
  try {
    return await fn(span);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const type = code !== undefined ? String(code) : err instanceof Error ? err.name : "error";
    span.setAttribute(ATTR.errorType, type);
    span.setStatus({ code: SpanStatusCode.ERROR, message: type });
    throw err;
  } finally {
    span.end();
  }
}
