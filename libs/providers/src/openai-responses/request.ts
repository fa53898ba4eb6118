import type { ResponseCreateParamsStreaming, ResponseInputItem, FunctionTool } from "openai/resources/responses/responses";
import type { ModelCallRequest } from "@byok/protocol";
import type { AdapterOptions } from "../shared/options.js";
import { answeredItems } from "../shared/answered.js";
import { chatReasoningEffort } from "../openai-chat/request.js";

/** OpenAI models that reason (accept `reasoning` and return encrypted reasoning). */
export function isReasoningModel(model: string): boolean {
  return /^(o\d|gpt-5|codex)/i.test(model);
}

/**
 * Maps the neutral request to a streamed Responses body.
 *
 * The gateway keeps history itself, so requests are stateless: `store: false`, the full
 * input every pass, and — for reasoning models — `include: ["reasoning.encrypted_content"]`
 * so each reasoning item comes back encrypted and is replayed verbatim (id, summary,
 * encrypted_content) on later passes; the model then continues its own chain of thought
 * across tool calls. Reasoning from other providers (no encrypted content) is not sent.
 * Tool calls go back as `function_call` items with the gateway call id, results as
 * `function_call_output`.
 */
export function toResponsesRequest(req: ModelCallRequest, opts: AdapterOptions): ResponseCreateParamsStreaming {
  const input: ResponseInputItem[] = [];
  for (const item of answeredItems(req.items)) {
    switch (item.role) {
      case "user":
        input.push({ type: "message", role: "user", content: item.text });
        break;
      case "tool":
        input.push({ type: "function_call_output", call_id: item.toolCallId, output: item.output });
        break;
      case "assistant":
        for (const r of item.reasoning ?? []) {
          if (!r.encryptedContent || !r.providerItemId) continue;
          input.push({
            type: "reasoning",
            id: r.providerItemId,
            summary: r.text ? [{ type: "summary_text", text: r.text }] : [],
            encrypted_content: r.encryptedContent,
          });
        }
        if (item.text) input.push({ type: "message", role: "assistant", content: item.text });
        for (const c of item.toolCalls ?? []) {
          input.push({ type: "function_call", call_id: c.id, name: c.name, arguments: c.argumentsJson });
        }
        break;
    }
  }
  const tools: FunctionTool[] = req.tools.map((t) => ({
    type: "function",
    name: t.name,
    description: t.description,
    parameters: t.parameters,
    strict: false,
  }));
  const reasoning = opts.reasoningModel ?? isReasoningModel(req.target.model);
  const effort = req.reasoningEffort ?? req.target.reasoningEffort;
  const body: ResponseCreateParamsStreaming & Record<string, unknown> = {
    model: req.target.model,
    input,
    stream: true,
    store: false,
    ...(req.instructions ? { instructions: req.instructions } : {}),
    ...(tools.length ? { tools } : {}),
    ...(req.target.maxOutputTokens ? { max_output_tokens: req.target.maxOutputTokens } : {}),
  };
  if (reasoning) {
    body.include = ["reasoning.encrypted_content"];
    body.reasoning = {
      ...(effort && opts.sendReasoningEffort ? { effort: chatReasoningEffort(effort) } : {}),
      ...(opts.reasoningSummary !== "none" ? { summary: opts.reasoningSummary } : {}),
    };
  }
  return { ...body, ...opts.extraBody } as ResponseCreateParamsStreaming;
}
