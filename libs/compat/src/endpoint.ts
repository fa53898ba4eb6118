import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { ProviderEvent } from "@byok/protocol";
import { runCall, type CallResult, type CallSink, type CompatCall, type CompatCallDeps, type CompatPrincipal } from "./call.js";
import { Collector } from "./collect.js";
import { asCompatError, type CompatError } from "./errors.js";
import { sendJson, type SseWriter } from "./http.js";

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

/** One server-sent event: its data, and its event name where the API names events. */
export interface SseEvent {
  data: unknown;
  event?: string;
}

/**
 * How a passthrough attempt's vendor output reaches the caller: as the vendor sent it, under the
 * gateway's id (the ledger's request id) and the model name the caller asked for.
 */
export interface Relay {
  /** A vendor stream event as the caller gets it, or undefined to drop it. */
  event(ev: Record<string, unknown>): SseEvent | undefined;
  /** Sent after the vendor's last event (Chat Completions' `[DONE]`, which the SDK consumes). */
  end?: string;
  /** The vendor's non-streaming response as the caller gets it. */
  response(r: Record<string, unknown>): Record<string, unknown>;
}

/** `v` under the gateway's id and the caller's model name. */
export function renamed(v: Record<string, unknown>, id: string, model: string): Record<string, unknown> {
  return { ...v, id, model };
}

/** A translated attempt's streaming renderer: vendor events from the provider-neutral ones. */
export interface TranslatedStream {
  event(ev: ProviderEvent): void;
  /** Forgets what an earlier attempt produced. */
  reset(): void;
  /** Ends the stream after a success. */
  finish(out: CallResult): void;
}

/** Everything a streaming endpoint renders with. */
export interface StreamRendering {
  /** Absent when the request has no translation (only same-API targets can serve it then). */
  translated: TranslatedStream | undefined;
  relay: Relay;
  /** The vendor's in-stream error. */
  streamError(e: CompatError): SseEvent;
}

/** Streams each attempt the way it is served: relayed (passthrough) or rendered from neutral events. */
class StreamSink implements CallSink {
  private passthrough = false;
  constructor(
    private readonly sse: SseWriter,
    private readonly out: StreamRendering,
  ) {}

  get committed(): boolean {
    return this.sse.started;
  }

  get firstWriteAt(): number | undefined {
    return this.sse.startedAt;
  }

  begin(passthrough: boolean): void {
    this.passthrough = passthrough;
    this.out.translated?.reset();
  }

  event(ev: ProviderEvent): void {
    this.out.translated?.event(ev);
  }

  vendorEvent(ev: Record<string, unknown>): void {
    const o = this.out.relay.event(ev);
    if (o) this.sse.send(o.data, o.event);
  }

  finish(res: CallResult): void {
    if (!this.passthrough) this.out.translated?.finish(res);
    else if (this.out.relay.end) this.sse.send(this.out.relay.end);
  }

  fail(e: CompatError): void {
    const o = this.out.streamError(e);
    this.sse.send(o.data, o.event);
  }
}

/**
 * Runs a streaming call. A failure before anything was written is thrown (the caller answers
 * with an HTTP error status); after that the status is sent, so the error goes in the stream.
 */
export async function streamCall(ctx: EndpointContext, requestId: string, call: CompatCall, sse: SseWriter, rendering: StreamRendering): Promise<void> {
  const sink = new StreamSink(sse, rendering);
  try {
    sink.finish(await runCall(ctx.deps, ctx.principal, requestId, call, sink, ctx.signal));
  } catch (err) {
    const e = asCompatError(err);
    if (!sse.started) throw e;
    sink.fail(e);
  }
  sse.end();
}

/**
 * Runs a non-streaming call and answers with the vendor's response (passthrough) or the body
 * `translatedBody` renders from the translated attempt's output.
 */
export async function respondCall(
  ctx: EndpointContext,
  requestId: string,
  call: CompatCall,
  relay: Relay,
  translatedBody: (collected: Collector, out: CallResult) => unknown,
): Promise<void> {
  const sink = new Collector();
  const out = await runCall(ctx.deps, ctx.principal, requestId, call, sink, ctx.signal);
  sendJson(ctx.res, 200, sink.response ? relay.response(sink.response) : translatedBody(sink, out));
}
