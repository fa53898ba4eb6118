/**
 * Anthropic Messages API, streamed, as documented:
 * - https://docs.anthropic.com/en/api/messages-streaming (event flow and payloads)
 * - https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking (thinking, signature_delta)
 * - https://docs.anthropic.com/en/api/errors (error bodies, 529 overloaded, errors inside streams)
 *
 * Framing: named SSE events, `event: <type>\ndata: <json with the same "type">\n\n`.
 * Order: `message_start` (usage with input and cache tokens, output_tokens 1); per content
 * block `content_block_start` → `content_block_delta`… → `content_block_stop` (a `ping`
 * follows the first block start, as in the docs' example); `message_delta` (stop_reason and
 * cumulative usage); `message_stop`. Block kinds: `thinking` (thinking_delta…, then one
 * signature_delta), `redacted_thinking` (data in the start event), `text` (text_delta…),
 * `tool_use` (id/name in the start event, input_json_delta partial_json…).
 * Errors inside a stream: `event: error` with `{"type":"error","error":{type,message}}`.
 */
import type { ApiRenderer, Frame, RenderContext } from "./renderer.js";
import { sseEvent } from "./renderer.js";
import { defaultUsage, joinDeltas, splitDeltas, type SimScript, type SimUsage } from "./script.js";
import { simTokens } from "./validate.js";

function usageParts(script: SimScript, ctx: RenderContext): { start: Record<string, unknown>; final: Record<string, unknown> } {
  if (script.rawUsage) return { start: script.rawUsage, final: script.rawUsage };
  const u: SimUsage = script.usage ?? defaultUsage(script, ctx.request.rawBody);
  return {
    start: {
      input_tokens: u.inputTokens,
      cache_creation_input_tokens: u.cacheWriteTokens ?? 0,
      cache_read_input_tokens: u.cacheReadTokens ?? 0,
      output_tokens: 1,
    },
    final: { output_tokens: u.outputTokens },
  };
}

function stopReason(script: SimScript): string {
  return script.finishReason ?? (script.toolCalls?.length ? "tool_use" : "end_turn");
}

/** The Anthropic stream as event objects (shared with the Bedrock renderer, which wraps the same events). */
export function anthropicEvents(script: SimScript, ctx: RenderContext): Record<string, unknown>[] {
  const model = typeof ctx.request.body?.["model"] === "string" ? ctx.request.body["model"] : "claude-sim";
  const usage = usageParts(script, ctx);
  const events: Record<string, unknown>[] = [
    {
      type: "message_start",
      message: { id: `msg_sim${ctx.seq}`, type: "message", role: "assistant", content: [], model, stop_reason: null, stop_sequence: null, usage: usage.start },
    },
  ];
  let index = 0;
  const block = (start: Record<string, unknown>, deltas: Record<string, unknown>[]) => {
    events.push({ type: "content_block_start", index, content_block: start });
    if (index === 0) events.push({ type: "ping" });
    for (const delta of deltas) events.push({ type: "content_block_delta", index, delta });
    events.push({ type: "content_block_stop", index });
    index++;
  };
  if (script.redactedThinking !== undefined) block({ type: "redacted_thinking", data: script.redactedThinking }, []);
  if (script.reasoning !== undefined) {
    block({ type: "thinking", thinking: "", signature: "" }, [
      ...splitDeltas(script.reasoning).map((thinking) => ({ type: "thinking_delta", thinking })),
      { type: "signature_delta", signature: script.reasoningSignature ?? `sig_sim${ctx.seq}` },
    ]);
  }
  if (script.text !== undefined) {
    block({ type: "text", text: "" }, splitDeltas(script.text).map((text) => ({ type: "text_delta", text })));
  }
  for (const [i, call] of (script.toolCalls ?? []).entries()) {
    block(
      { type: "tool_use", id: call.id ?? `toolu_sim${ctx.seq}_${i}`, name: call.name, input: {} },
      splitDeltas(call.arguments).map((partial_json) => ({ type: "input_json_delta", partial_json })),
    );
  }
  events.push({ type: "message_delta", delta: { stop_reason: stopReason(script), stop_sequence: null }, usage: usage.final });
  events.push({ type: "message_stop" });
  return events;
}

export function anthropicMessage(script: SimScript, ctx: RenderContext): Record<string, unknown> {
  const model = typeof ctx.request.body?.["model"] === "string" ? ctx.request.body["model"] : "claude-sim";
  const content: Record<string, unknown>[] = [];
  if (script.reasoning !== undefined) content.push({ type: "thinking", thinking: joinDeltas(script.reasoning), signature: script.reasoningSignature ?? `sig_sim${ctx.seq}` });
  if (script.text !== undefined) content.push({ type: "text", text: joinDeltas(script.text) });
  for (const [i, call] of (script.toolCalls ?? []).entries()) {
    content.push({ type: "tool_use", id: call.id ?? `toolu_sim${ctx.seq}_${i}`, name: call.name, input: JSON.parse(joinDeltas(call.arguments) || "{}") as unknown });
  }
  const u = usageParts(script, ctx);
  return { id: `msg_sim${ctx.seq}`, type: "message", role: "assistant", model, content, stop_reason: stopReason(script), stop_sequence: null, usage: { ...u.start, ...u.final } };
}

/** Anthropic's error body for `status` (https://docs.anthropic.com/en/api/errors). */
export function anthropicErrorBody(status: number): Record<string, unknown> {
  const e = ((): [string, string] => {
    switch (status) {
      case 400:
        return ["invalid_request_error", "There was an issue with the format or content of your request."];
      case 401:
        return ["authentication_error", "invalid x-api-key"];
      case 402:
        return ["billing_error", "There is an issue with your billing or payment information."];
      case 403:
        return ["permission_error", "Your API key does not have permission to use the specified resource."];
      case 404:
        return ["not_found_error", "model: claude-nope"];
      case 413:
        return ["request_too_large", "Request exceeds the maximum allowed number of bytes."];
      case 429:
        return ["rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."];
      case 529:
        return ["overloaded_error", "Overloaded"];
      default:
        return status >= 500 ? ["api_error", "Internal server error"] : ["invalid_request_error", `Simulated error ${status}`];
    }
  })();
  return { type: "error", error: { type: e[0], message: e[1] }, request_id: "req_sim" };
}

export const anthropicMessagesRenderer: ApiRenderer = {
  api: "anthropic-messages",
  streamContentType: "text/event-stream; charset=utf-8",
  matches: (method, pathname) => method === "POST" && pathname.endsWith("/v1/messages"),
  isStreaming: (body) => body?.["stream"] === true,
  streamFrames: (script, ctx): Frame[] => anthropicEvents(script, ctx).map((e) => sseEvent(String(e["type"]), e)),
  streamErrorFrame: (err) => sseEvent("error", { type: "error", error: { type: err.code, message: err.message } }),
  malformedFrame: () => `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"unterminated\n\n`,
  jsonResponse: anthropicMessage,
  errorBody: (status) => anthropicErrorBody(status),
};

/**
 * `POST /v1/messages/count_tokens` (https://docs.anthropic.com/en/api/messages-count-tokens):
 * `{"input_tokens": n}` with the simulator's count of the request (validate.ts `simTokens`,
 * about four characters of the body per token), so a test can tell the vendor's count from
 * the gateway's own estimate. A queued script's `httpError` answers instead.
 */
export const anthropicCountTokensRenderer: ApiRenderer = {
  api: "anthropic-count-tokens",
  streamContentType: "application/json",
  matches: (method, pathname) => method === "POST" && pathname.endsWith("/v1/messages/count_tokens"),
  isStreaming: () => false,
  streamFrames: () => [],
  streamErrorFrame: (err) => JSON.stringify({ type: "error", error: { type: err.code, message: err.message } }),
  malformedFrame: () => "{",
  jsonResponse: (_script, ctx) => ({ input_tokens: simTokens(ctx.request) }),
  errorBody: (status) => anthropicErrorBody(status),
};
