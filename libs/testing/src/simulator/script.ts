/**
 * What the provider simulator answers to one request. Scripts are vendor-neutral: each
 * API's renderer (openai-chat.ts, openai-responses.ts, anthropic-messages.ts, bedrock.ts)
 * turns the same script into that vendor's exact framing.
 *
 * Output order inside one answer is always: reasoning, then text, then tool calls.
 */
export interface SimScript {
  /** Assistant text. A string is split into word-sized deltas; an array gives the deltas exactly. */
  text?: string | string[];
  /** Reasoning / thinking text, same splitting rules as `text`. */
  reasoning?: string | string[];
  /**
   * Chat Completions only: the delta field carrying reasoning (compatible endpoints differ:
   * DeepSeek and vLLM use `reasoning_content`, OpenRouter and others `reasoning`).
   */
  reasoningField?: "reasoning_content" | "reasoning";
  /** Anthropic thinking-block signature / OpenAI Responses encrypted reasoning content. */
  reasoningSignature?: string;
  /** Anthropic only: a redacted_thinking block (its opaque data) emitted before the thinking block. */
  redactedThinking?: string;
  toolCalls?: SimToolCall[];
  /**
   * Usage in the gateway's normalized sense (see SimUsage); each renderer converts it to the
   * vendor's shape. `null` omits usage where the vendor allows that (Chat Completions usage chunk).
   * When absent, a small usage derived from the text lengths is reported.
   */
  usage?: SimUsage | null;
  /** Emitted verbatim as the vendor's usage object instead of converting `usage`. */
  rawUsage?: Record<string, unknown>;
  /** Vendor stop / finish reason; by default `tool_calls`/`tool_use` when there are tool calls, else the normal stop. */
  finishReason?: string;
  /** Answer with this HTTP error instead of a stream. */
  httpError?: SimHttpError;
  /** An error reported inside the stream (after `afterChunks` frames); the stream then ends. */
  streamError?: SimStreamError;
  /** Wait this long between frames. */
  chunkDelayMs?: number;
  /** Wait this long before sending the response status and headers. */
  firstByteDelayMs?: number;
  /** Destroy the TCP connection after this many frames (no terminator is sent). */
  disconnectAfterChunks?: number;
  /** End the HTTP response cleanly after this many frames, without the vendor's terminator. */
  endAfterChunks?: number;
  /** Stop sending after this many frames and hold the connection open until the client goes away or the simulator closes. */
  stallAfterChunks?: number;
  /**
   * Wait this long after the last frame before ending the response: the body's terminating
   * chunk arrives after the vendor's end event (`[DONE]`), as it can through a load balancer.
   */
  endDelayMs?: number;
  /** Replace the frame at this index with a malformed one (invalid JSON / bad binary frame). */
  malformedAt?: number;
  /** Extra response headers on a successful stream. */
  headers?: Record<string, string>;
}

export interface SimToolCall {
  /** Vendor call id; generated when absent. */
  id?: string;
  name: string;
  /** Argument JSON text; an array gives the streamed pieces exactly. */
  arguments: string | string[];
}

/**
 * Normalized usage: `inputTokens` excludes cache reads and writes, `outputTokens` includes
 * reasoning. Renderers convert to the vendor shape (e.g. OpenAI `prompt_tokens` =
 * input + cacheRead; Anthropic `input_tokens` = input, cache fields separate).
 */
export interface SimUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
}

export interface SimHttpError {
  status: number;
  /** JSON body (serialized) or raw text. When absent, a vendor-shaped error body is generated. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface SimStreamError {
  /** Frames sent before the error; default 1. */
  afterChunks?: number;
  /** Vendor error type / code, e.g. `overloaded_error`, `server_error`, `rate_limit_exceeded`. */
  code: string;
  message: string;
}

/** Splits text into deltas: a string into word-sized pieces (spaces kept), an array as given. */
export function splitDeltas(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  if (Array.isArray(value)) return value;
  if (value === "") return [];
  return value.match(/\s*\S+\s*/g) ?? [value];
}

export function joinDeltas(value: string | string[] | undefined): string {
  if (value === undefined) return "";
  return Array.isArray(value) ? value.join("") : value;
}

/** Usage reported when a script gives none: about four characters per token. */
export function defaultUsage(script: SimScript, rawRequestBody: string): SimUsage {
  const out =
    joinDeltas(script.text).length +
    joinDeltas(script.reasoning).length +
    (script.toolCalls ?? []).reduce((n, c) => n + c.name.length + joinDeltas(c.arguments).length, 0);
  return {
    inputTokens: Math.max(1, Math.ceil(rawRequestBody.length / 4)),
    outputTokens: Math.max(1, Math.ceil(out / 4)),
    reasoningTokens: script.reasoning === undefined ? 0 : Math.ceil(joinDeltas(script.reasoning).length / 4),
  };
}
