import { context, propagation, type Context } from "@opentelemetry/api";

/** A W3C trace-context carrier (`traceparent`, optional `tracestate` / `baggage`), as stored with bus entries. */
export type TraceCarrier = Record<string, string>;

/**
 * Serializes `ctx` (default: the active context) with the globally registered propagator.
 * Returns `{}` when no propagator is registered or no span is active; never throws.
 */
export function injectTraceContext(ctx: Context = context.active()): TraceCarrier {
  const carrier: TraceCarrier = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/**
 * Returns `base` (default: the active context) with the remote span context of `carrier` as
 * parent, for `context.with(extractTraceContext(c), ...)` or `tracer.startSpan(n, o, ctx)`.
 * A missing or malformed carrier yields `base` unchanged.
 */
export function extractTraceContext(carrier: Readonly<Record<string, string | undefined>> | undefined | null, base: Context = context.active()): Context {
  if (!carrier) return base;
  return propagation.extract(base, carrier);
}
