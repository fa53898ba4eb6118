import type {
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import type { ModelCallRequest, ReasoningEffort, VendorPassthrough } from "@byok/protocol";
import type { AdapterOptions } from "../shared/options.js";
import { answeredItems } from "../shared/answered.js";
import { passthroughBody } from "../shared/passthrough.js";

/** OpenAI's own effort names; `disabled` becomes `none` (GPT-5.x), `max` passes through (SDK v7 knows it). */
export function chatReasoningEffort(e: ReasoningEffort): "none" | "low" | "medium" | "high" | "xhigh" | "max" {
  return e === "disabled" ? "none" : e;
}

function isOpenAIHost(baseUrl: string | undefined): boolean {
  if (!baseUrl) return true;
  try {
    return new URL(baseUrl).hostname === "api.openai.com";
  } catch {
    return false;
  }
}

/**
 * Maps the neutral request to a streamed Chat Completions body.
 *
 * - Instructions go first as a `system` message (every compatible server accepts it).
 * - Assistant turns carry text and `tool_calls`; earlier reasoning is replayed only when the
 *   route says the endpoint needs it (`replayReasoning`), in the field it names.
 * - Tool results become `tool` messages with the gateway call id.
 * - `stream_options.include_usage` is always set so the last chunk carries exact usage.
 * - `extraBody` from the route is merged last and can override anything above.
 */
export function toChatRequest(req: ModelCallRequest, opts: AdapterOptions): ChatCompletionCreateParamsStreaming {
  const messages: ChatCompletionMessageParam[] = [];
  if (req.instructions) messages.push({ role: "system", content: req.instructions });
  for (const item of answeredItems(req.items)) {
    switch (item.role) {
      case "user":
        messages.push({ role: "user", content: item.text });
        break;
      case "tool":
        messages.push({ role: "tool", tool_call_id: item.toolCallId, content: item.output });
        break;
      case "assistant": {
        const toolCalls = (item.toolCalls ?? []).map((c) => ({
          id: c.id,
          type: "function" as const,
          function: { name: c.name, arguments: c.argumentsJson },
        }));
        const text = item.text ?? "";
        const reasoning = (item.reasoning ?? []).map((r) => r.text).join("");
        if (!text && toolCalls.length === 0) break; // reasoning-only turns have nothing a Chat endpoint can take
        const msg: ChatCompletionMessageParam & Record<string, unknown> = {
          role: "assistant",
          content: text || null,
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
        };
        if (opts.replayReasoning !== "none" && reasoning) msg[opts.replayReasoning] = reasoning;
        messages.push(msg);
        break;
      }
    }
  }

  const tools: ChatCompletionTool[] = req.tools.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));

  const body: ChatCompletionCreateParamsStreaming & Record<string, unknown> = {
    model: req.target.model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    ...(tools.length ? { tools } : {}),
  };
  const effort = req.reasoningEffort ?? req.target.reasoningEffort;
  if (effort && opts.sendReasoningEffort) body.reasoning_effort = chatReasoningEffort(effort);
  if (req.target.maxOutputTokens) body[capParam(req, opts)] = req.target.maxOutputTokens;
  return { ...body, ...opts.extraBody } as ChatCompletionCreateParamsStreaming;
}

function capParam(req: ModelCallRequest, opts: AdapterOptions): "max_tokens" | "max_completion_tokens" {
  return opts.maxTokensParam ?? (isOpenAIHost(req.target.baseUrl) ? "max_completion_tokens" : "max_tokens");
}

/**
 * The caller's own Chat Completions body (passthrough): streamed bodies always ask for
 * `stream_options.include_usage`, so the ledger gets the exact usage (the compatible endpoint
 * drops the usage chunk again when the caller did not ask for it).
 */
export function chatPassthroughBody(req: ModelCallRequest, p: VendorPassthrough, opts: AdapterOptions): Record<string, unknown> {
  const body = passthroughBody(p, req.target, opts, { fields: ["max_tokens", "max_completion_tokens"], defaultField: capParam(req, opts) });
  if (p.stream) {
    const so = body["stream_options"];
    body["stream_options"] = { ...(typeof so === "object" && so !== null ? so : {}), include_usage: true };
  }
  return body;
}
