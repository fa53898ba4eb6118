import { APIError } from "@anthropic-ai/sdk";
import { SSE_SKIP, sseItems, type SseDialect, type ServerSentEvent } from "../shared/sse.js";

function safeJSON(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `body?.error?.type` as the SDK reads it. */
function errorType(body: unknown): unknown {
  const error = body === null || body === undefined ? undefined : (body as { error?: unknown }).error;
  return error === null || error === undefined ? undefined : (error as { type?: unknown }).type;
}

/**
 * What `@anthropic-ai/sdk`'s `Stream.fromSSEResponse` does with each event
 * (node_modules/@anthropic-ai/sdk/core/streaming.mjs): `ping` and unnamed events are skipped;
 * an `error` event is the SDK's APIError (body, response headers and `error.type`, as the SDK
 * builds it, so mapAnthropicError classifies it unchanged); an empty payload is skipped; a
 * payload that is not JSON throws JSON.parse's own SyntaxError (→ `malformed_stream`). An
 * event still open when the body ends is dropped, as the SDK drops it.
 */
export const ANTHROPIC_SSE: SseDialect<unknown> = {
  dispatchOpenEventAtEnd: false,
  item(sse: ServerSentEvent, headers: Headers) {
    if (sse.event === "ping" || sse.event === null) return SSE_SKIP;
    if (sse.event === "error") {
      const body = safeJSON(sse.data) ?? sse.data;
      const type = errorType(body);
      throw new APIError(undefined, body as object, undefined, headers, type as ConstructorParameters<typeof APIError>[4]);
    }
    if (!sse.data) return SSE_SKIP;
    return JSON.parse(sse.data) as unknown;
  },
};

/** A streamed Messages call read with the lean SSE reader (the SDK sends it and throws its status errors). */
export async function anthropicSseStream<T>(call: { asResponse(): Promise<Response> }, signal: AbortSignal): Promise<AsyncIterable<T[]>> {
  const response = await call.asResponse();
  return sseItems(response, signal, ANTHROPIC_SSE as SseDialect<T>);
}
