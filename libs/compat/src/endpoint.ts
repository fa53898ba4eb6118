import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import { runCall, type CallResult, type CallSink, type CompatCall, type CompatCallDeps, type CompatPrincipal } from "./call.js";
import { asCompatError, type CompatError } from "./errors.js";
import type { SseWriter } from "./http.js";

/** What a vendor endpoint gets once the caller is authenticated and the body is read. */
export interface EndpointContext {
  deps: CompatCallDeps;
  principal: CompatPrincipal;
  body: unknown;
  res: ServerResponse;
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
}

/** One vendor endpoint: serves a request, and renders a failure in the vendor's error shape. */
export interface Endpoint {
  serve(ctx: EndpointContext): Promise<void>;
  errorBody(e: CompatError): unknown;
}

/** A vendor-style id: `<prefix><24 hex>`. */
export function vendorId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString("hex")}`;
}

/** A streaming renderer: ends the stream after a success, or with the vendor's in-stream error. */
export interface StreamSink extends CallSink {
  finish(out: CallResult): void;
  fail(e: CompatError): void;
}

/**
 * Runs a streaming call. A failure before anything was written is thrown (the caller answers
 * with an HTTP error status); after that the status is sent, so the error goes in the stream.
 */
export async function streamCall(ctx: EndpointContext, requestId: string, call: CompatCall, sse: SseWriter, sink: StreamSink): Promise<void> {
  try {
    sink.finish(await runCall(ctx.deps, ctx.principal, requestId, call, sink, ctx.signal));
  } catch (err) {
    const e = asCompatError(err);
    if (!sse.started) throw e;
    sink.fail(e);
  }
  sse.end();
}
