/**
 * OpenAI Responses API, streamed, as documented:
 * - https://platform.openai.com/docs/api-reference/responses/create (`stream`, `include`, `store`)
 * - https://platform.openai.com/docs/api-reference/responses-streaming (event names and payloads)
 *
 * Framing: named SSE events, `event: <type>\ndata: <json with the same "type">\n\n`, each
 * with a growing `sequence_number`; no `[DONE]` sentinel: the stream ends after
 * `response.completed` / `response.incomplete` / `response.failed`.
 * Order: `response.created`, `response.in_progress`; per output item
 * `response.output_item.added` → its content events → `response.output_item.done`:
 *   reasoning: `response.reasoning_summary_part.added`, `response.reasoning_summary_text.delta`…,
 *     `response.reasoning_summary_text.done`, `response.reasoning_summary_part.done`
 *     (the done item carries `encrypted_content` when the request asked for
 *     `include: ["reasoning.encrypted_content"]`);
 *   message: `response.content_part.added`, `response.output_text.delta`…, `response.output_text.done`,
 *     `response.content_part.done`;
 *   function call: `response.function_call_arguments.delta`…, `response.function_call_arguments.done`;
 * then `response.completed` with the whole response and its `usage`.
 */
import type { ApiRenderer, Frame, RenderContext } from "./renderer.js";
import { sseEvent } from "./renderer.js";
import { defaultUsage, joinDeltas, splitDeltas, type SimScript, type SimUsage } from "./script.js";
import { openAIErrorObject } from "./openai-chat.js";

export function responsesUsageObject(script: SimScript, ctx: RenderContext): Record<string, unknown> {
  if (script.rawUsage) return script.rawUsage;
  const u: SimUsage = script.usage ?? defaultUsage(script, ctx.request.rawBody);
  const cached = u.cacheReadTokens ?? 0;
  const written = u.cacheWriteTokens ?? 0;
  const input = u.inputTokens + cached + written;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: cached, cache_write_tokens: written },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens ?? 0 },
    total_tokens: input + u.outputTokens,
  };
}

function wantsEncrypted(ctx: RenderContext): boolean {
  const inc = ctx.request.body?.["include"];
  return Array.isArray(inc) && inc.includes("reasoning.encrypted_content");
}

interface Built {
  output: Record<string, unknown>[];
  frames: Frame[];
}

function build(script: SimScript, ctx: RenderContext): Built & { responseBase: Record<string, unknown>; next: () => number } {
  let seq = 0;
  const next = () => seq++;
  const model = typeof ctx.request.body?.["model"] === "string" ? ctx.request.body["model"] : "sim-model";
  const responseBase = {
    id: `resp_sim${ctx.seq}`,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    model,
    error: null,
    incomplete_details: null,
    instructions: ctx.request.body?.["instructions"] ?? null,
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: ctx.request.body?.["tools"] ?? [],
    store: ctx.request.body?.["store"] ?? true,
  };
  const frames: Frame[] = [];
  const output: Record<string, unknown>[] = [];
  const ev = (type: string, payload: Record<string, unknown>) => frames.push(sseEvent(type, { type, sequence_number: next(), ...payload }));

  ev("response.created", { response: { ...responseBase, status: "in_progress", output: [], usage: null } });
  ev("response.in_progress", { response: { ...responseBase, status: "in_progress", output: [], usage: null } });

  if (script.reasoning !== undefined) {
    const output_index = output.length;
    const id = `rs_sim${ctx.seq}_${output_index}`;
    const text = joinDeltas(script.reasoning);
    ev("response.output_item.added", { output_index, item: { id, type: "reasoning", summary: [] } });
    ev("response.reasoning_summary_part.added", { item_id: id, output_index, summary_index: 0, part: { type: "summary_text", text: "" } });
    for (const delta of splitDeltas(script.reasoning)) {
      ev("response.reasoning_summary_text.delta", { item_id: id, output_index, summary_index: 0, delta });
    }
    ev("response.reasoning_summary_text.done", { item_id: id, output_index, summary_index: 0, text });
    ev("response.reasoning_summary_part.done", { item_id: id, output_index, summary_index: 0, part: { type: "summary_text", text } });
    const item: Record<string, unknown> = { id, type: "reasoning", summary: [{ type: "summary_text", text }] };
    if (wantsEncrypted(ctx)) item["encrypted_content"] = script.reasoningSignature ?? `enc_sim${ctx.seq}_${Buffer.from(text).toString("base64")}`;
    ev("response.output_item.done", { output_index, item });
    output.push(item);
  }

  if (script.text !== undefined) {
    const output_index = output.length;
    const id = `msg_sim${ctx.seq}_${output_index}`;
    const text = joinDeltas(script.text);
    ev("response.output_item.added", { output_index, item: { id, type: "message", status: "in_progress", role: "assistant", content: [] } });
    ev("response.content_part.added", { item_id: id, output_index, content_index: 0, part: { type: "output_text", text: "", annotations: [], logprobs: [] } });
    for (const delta of splitDeltas(script.text)) {
      ev("response.output_text.delta", { item_id: id, output_index, content_index: 0, delta, logprobs: [] });
    }
    ev("response.output_text.done", { item_id: id, output_index, content_index: 0, text, logprobs: [] });
    const part = { type: "output_text", text, annotations: [], logprobs: [] };
    ev("response.content_part.done", { item_id: id, output_index, content_index: 0, part });
    const item = { id, type: "message", status: "completed", role: "assistant", content: [part] };
    ev("response.output_item.done", { output_index, item });
    output.push(item);
  }

  for (const [i, call] of (script.toolCalls ?? []).entries()) {
    const output_index = output.length;
    const id = `fc_sim${ctx.seq}_${output_index}`;
    const call_id = call.id ?? `call_sim${ctx.seq}_${i}`;
    const args = joinDeltas(call.arguments);
    ev("response.output_item.added", { output_index, item: { id, type: "function_call", status: "in_progress", call_id, name: call.name, arguments: "" } });
    for (const delta of splitDeltas(call.arguments)) {
      ev("response.function_call_arguments.delta", { item_id: id, output_index, delta });
    }
    ev("response.function_call_arguments.done", { item_id: id, output_index, name: call.name, arguments: args });
    const item = { id, type: "function_call", status: "completed", call_id, name: call.name, arguments: args };
    ev("response.output_item.done", { output_index, item });
    output.push(item);
  }
  return { frames, output, responseBase, next };
}

export const openAIResponsesRenderer: ApiRenderer = {
  api: "openai-responses",
  streamContentType: "text/event-stream; charset=utf-8",

  matches: (method, pathname) => method === "POST" && pathname.endsWith("/responses"),

  isStreaming: (body) => body?.["stream"] === true,

  streamFrames(script, ctx) {
    const { frames, output, responseBase, next } = build(script, ctx);
    const usage = script.usage === null ? null : responsesUsageObject(script, ctx);
    // finishReason for this API: "max_output_tokens" or "content_filter" end the response as incomplete.
    if (script.finishReason === "max_output_tokens" || script.finishReason === "content_filter") {
      frames.push(
        sseEvent("response.incomplete", {
          type: "response.incomplete",
          sequence_number: next(),
          response: { ...responseBase, status: "incomplete", incomplete_details: { reason: script.finishReason }, output, usage },
        }),
      );
    } else {
      frames.push(
        sseEvent("response.completed", {
          type: "response.completed",
          sequence_number: next(),
          response: { ...responseBase, status: "completed", output, usage },
        }),
      );
    }
    return frames;
  },

  streamErrorFrame: (err) =>
    sseEvent("response.failed", {
      type: "response.failed",
      sequence_number: 9999,
      response: { id: "resp_failed", object: "response", status: "failed", error: { code: err.code, message: err.message }, output: [], usage: null },
    }),

  malformedFrame: () => `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"unterminated\n\n`,

  jsonResponse(script, ctx) {
    const { output, responseBase } = build(script, ctx);
    return { ...responseBase, status: "completed", output, usage: responsesUsageObject(script, ctx) };
  },

  errorBody: (status, request) => ({ error: openAIErrorObject(status, request.headers["authorization"]) }),
};
