import { SpanStatusCode, type Span, type SpanOptions, type Tracer } from "@opentelemetry/api";
import { ATTR } from "./span-names.js";

/**
 * Runs `fn` inside a new active span and ends it: a throw sets the span's status to ERROR with
 * `error.type` (the error's Connect `code` when it has one, else its class name) and rethrows.
 */
export async function withSpan<T>(tracer: Tracer, name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, options, async (span) => {
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
  });
}
