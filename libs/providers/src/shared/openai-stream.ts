import { APIError } from "openai";
import { SSE_END, sseItems, type SseDialect, type ServerSentEvent } from "./sse.js";

/** `v.error` as the SDK reads it (`data?.error`): undefined for null and undefined, a property read otherwise. */
function errorField(v: unknown): unknown {
  return v === null || v === undefined ? undefined : (v as { error?: unknown }).error;
}

/**
 * What the `openai` SDK's `Stream.fromSSEResponse` does with each event in its default (legacy)
 * mode (node_modules/openai/core/streaming.mjs): `[DONE]` ends the stream; data that is not JSON
 * is the SDK's SyntaxError (isMalformedStreamError → `malformed_stream`); an `error` event or a
 * payload with an `error` field is the SDK's APIError, built as the SDK builds it (no status,
 * the response headers), so mapOpenAIError classifies it unchanged; `thread.*` events (the
 * Assistants API) come wrapped as `{event, data}`.
 */
export const OPENAI_SSE: SseDialect<unknown> = {
  dispatchOpenEventAtEnd: true,
  item(sse: ServerSentEvent, headers: Headers) {
    if (sse.data === "[DONE]") return SSE_END;
    let data: unknown;
    try {
      data = JSON.parse(sse.data);
    } catch {
      throw new SyntaxError("Error reading response: malformed server-sent event JSON.");
    }
    if (sse.event?.startsWith("thread.")) return { event: sse.event, data };
    if (sse.event === "error") throw new APIError(undefined, (errorField(data) ?? data) as object | undefined, undefined, headers);
    const error = errorField(data);
    if (data && error) throw new APIError(undefined, error as object, undefined, headers);
    return data;
  },
};

/**
 * A streamed `openai` SDK call read with the lean SSE reader: the SDK sends the request and
 * throws its status errors (`asResponse()` resolves only for a 2xx), the body is read here.
 * `T` is the event type the SDK's Stream would have yielded (the JSON is not validated, as the
 * SDK does not validate it either). `drainAfterDoneMs` bounds the read after `[DONE]` (sseItems).
 */
export async function openaiSseStream<T>(call: { asResponse(): Promise<Response> }, signal: AbortSignal, drainAfterDoneMs?: number): Promise<AsyncIterable<T[]>> {
  const response = await call.asResponse();
  return sseItems(response, signal, OPENAI_SSE as SseDialect<T>, drainAfterDoneMs);
}
