/**
 * OpenAI Chat Completions, streamed, exactly as documented:
 * - https://platform.openai.com/docs/api-reference/chat/create (`stream`, `stream_options.include_usage`)
 * - https://platform.openai.com/docs/api-reference/chat-streaming (the chunk object)
 *
 * Framing: one SSE `data: <chat.completion.chunk JSON>\n\n` per chunk, no event names,
 * terminated by `data: [DONE]\n\n`. Order: a first chunk with `delta.role = "assistant"`;
 * content deltas; tool-call deltas (`tool_calls[{index, id, type, function{name, arguments}}]`
 * on a call's first chunk, then `{index, function{arguments}}` pieces); a chunk with an
 * empty delta and `finish_reason`; with `include_usage`, every chunk carries `usage: null`
 * and one extra chunk with `choices: []` and the usage precedes `[DONE]`.
 *
 * OpenAI-compatible reasoning endpoints (DeepSeek, vLLM, OpenRouter…) add
 * `delta.reasoning_content` (or `delta.reasoning`) pieces before the content.
 * Errors inside a stream arrive as `data: {"error": {...}}` (the SDK throws an APIError).
 */
import type { ApiRenderer, Frame, RenderContext } from "./renderer.js";
import { sseData } from "./renderer.js";
import { defaultUsage, joinDeltas, splitDeltas, type SimScript, type SimUsage } from "./script.js";

export function chatUsageObject(script: SimScript, ctx: RenderContext): Record<string, unknown> {
  if (script.rawUsage) return script.rawUsage;
  const u: SimUsage = script.usage ?? defaultUsage(script, ctx.request.rawBody);
  const cached = u.cacheReadTokens ?? 0;
  const prompt = u.inputTokens + cached;
  return {
    prompt_tokens: prompt,
    completion_tokens: u.outputTokens,
    total_tokens: prompt + u.outputTokens,
    prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: u.reasoningTokens ?? 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

function wantsUsage(ctx: RenderContext): boolean {
  const so = ctx.request.body?.["stream_options"];
  return typeof so === "object" && so !== null && (so as Record<string, unknown>)["include_usage"] === true;
}

function model(ctx: RenderContext): string {
  const m = ctx.request.body?.["model"];
  return typeof m === "string" ? m : "sim-model";
}

function finishReason(script: SimScript): string {
  return script.finishReason ?? (script.toolCalls?.length ? "tool_calls" : "stop");
}

export const openAIChatRenderer: ApiRenderer = {
  api: "openai-chat",
  streamContentType: "text/event-stream; charset=utf-8",

  matches: (method, pathname) => method === "POST" && pathname.endsWith("/chat/completions"),

  isStreaming: (body) => body?.["stream"] === true,

  streamFrames(script, ctx): Frame[] {
    const includeUsage = wantsUsage(ctx);
    const base = {
      id: `chatcmpl-sim${ctx.seq}`,
      object: "chat.completion.chunk",
      created: Math.floor(Date.now() / 1000),
      model: model(ctx),
      system_fingerprint: "fp_sim",
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      sseData({
        ...base,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
        ...(includeUsage ? { usage: null } : {}),
      });

    const frames: Frame[] = [chunk({ role: "assistant", content: "", refusal: null })];
    const field = script.reasoningField ?? "reasoning_content";
    for (const piece of splitDeltas(script.reasoning)) frames.push(chunk({ [field]: piece }));
    for (const piece of splitDeltas(script.text)) frames.push(chunk({ content: piece }));
    (script.toolCalls ?? []).forEach((call, index) => {
      frames.push(
        chunk({
          tool_calls: [
            { index, id: call.id ?? `call_sim${ctx.seq}_${index}`, type: "function", function: { name: call.name, arguments: "" } },
          ],
        }),
      );
      for (const piece of splitDeltas(call.arguments)) {
        frames.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
      }
    });
    frames.push(chunk({}, finishReason(script)));
    if (includeUsage && script.usage !== null) {
      frames.push(sseData({ ...base, choices: [], usage: chatUsageObject(script, ctx) }));
    }
    frames.push(sseData("[DONE]"));
    return frames;
  },

  streamErrorFrame: (err) => sseData({ error: { message: err.message, type: err.code, param: null, code: err.code } }),

  malformedFrame: () => `data: {"id":"chatcmpl-broken","choices":[{"delta":{"content":"unterminated\n\n`,

  jsonResponse(script, ctx) {
    const toolCalls = (script.toolCalls ?? []).map((call, index) => ({
      id: call.id ?? `call_sim${ctx.seq}_${index}`,
      type: "function",
      function: { name: call.name, arguments: joinDeltas(call.arguments) },
    }));
    const message: Record<string, unknown> = {
      role: "assistant",
      content: script.text === undefined ? null : joinDeltas(script.text),
      refusal: null,
      ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
      ...(script.reasoning === undefined ? {} : { [script.reasoningField ?? "reasoning_content"]: joinDeltas(script.reasoning) }),
    };
    return {
      id: `chatcmpl-sim${ctx.seq}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: model(ctx),
      system_fingerprint: "fp_sim",
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(script) }],
      usage: chatUsageObject(script, ctx),
    };
  },

  errorBody: (status, request) => ({ error: openAIErrorObject(status, request.headers["authorization"]) }),
};

/**
 * The `error` object OpenAI returns for `status`. The 401 message deliberately echoes the
 * presented key in full (OpenAI masks it, some compatible servers do not) so tests prove the
 * adapter never forwards a vendor's error text verbatim.
 */
export function openAIErrorObject(status: number, authorization: string | undefined): Record<string, unknown> {
  const key = (authorization ?? "").replace(/^Bearer\s+/i, "");
  switch (status) {
    case 400:
      return { message: "Invalid request.", type: "invalid_request_error", param: null, code: null };
    case 401:
      return { message: `Incorrect API key provided: ${key}.`, type: "invalid_request_error", param: null, code: "invalid_api_key" };
    case 403:
      return { message: "You are not allowed to use this model.", type: "invalid_request_error", param: null, code: "model_not_allowed" };
    case 404:
      return { message: "The model does not exist or you do not have access to it.", type: "invalid_request_error", param: "model", code: "model_not_found" };
    case 429:
      return { message: "Rate limit reached for requests.", type: "requests", param: null, code: "rate_limit_exceeded" };
    case 503:
      return { message: "The server is overloaded or not ready yet.", type: "server_error", param: null, code: null };
    default:
      return status >= 500
        ? { message: "The server had an error while processing your request.", type: "server_error", param: null, code: null }
        : { message: `Simulated error ${status}.`, type: "invalid_request_error", param: null, code: null };
  }
}
