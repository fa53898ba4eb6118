import type { MessageCreateParamsStreaming, MessageParam, ContentBlockParam, Tool, TextBlockParam } from "@anthropic-ai/sdk/resources/messages";
import type { ModelCallRequest, ReasoningEffort } from "@byok/protocol";
import type { AdapterOptions } from "../shared/options.js";
import { answeredItems } from "../shared/answered.js";

/**
 * Thinking budgets per effort (tokens). Anthropic's minimum is 1024 and the budget must stay
 * below max_tokens, so budgets are clamped to the request's output cap.
 */
export const THINKING_BUDGETS: Readonly<Record<Exclude<ReasoningEffort, "disabled">, number>> = {
  low: 2_048,
  medium: 8_192,
  high: 16_384,
  xhigh: 32_000,
  max: 48_000,
};

/** A safe default output cap when the route sets none: older Claude 3.x models allow less. */
export function defaultMaxTokens(model: string): number {
  if (/claude-3-(haiku|sonnet|opus)/i.test(model)) return 4_096;
  if (/claude-3-5/i.test(model)) return 8_192;
  return 32_000;
}

const EPHEMERAL = { type: "ephemeral" as const };

function parseArgs(json: string): unknown {
  try {
    const v: unknown = JSON.parse(json || "{}");
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : { value: v };
  } catch {
    // The model produced invalid JSON earlier; send it back as a string so the turn stays valid.
    return { _raw: json };
  }
}

/**
 * Maps the neutral request to a streamed Messages body.
 *
 * - Turns alternate user/assistant: tool results (and a following user text) are merged into
 *   one user message, consecutive assistant parts into one assistant message.
 * - Assistant thinking is replayed only where Anthropic produced it: `thinking` blocks with
 *   their signature, `redacted_thinking` with its data; thinking from other providers is
 *   dropped (it cannot be verified and would be rejected).
 * - Prompt caching (`promptCaching`, default on): breakpoints on the system prompt, the last
 *   tool, and the last block of the last two user messages — at most four, Anthropic's limit —
 *   so each pass reads the previous pass's prefix from cache and writes the new tail.
 * - Thinking: an effort other than `disabled` enables thinking with THINKING_BUDGETS (or the
 *   route's `thinkingBudgetTokens`), clamped below max_tokens.
 */
export function toAnthropicRequest(req: ModelCallRequest, opts: AdapterOptions): MessageCreateParamsStreaming {
  const messages: MessageParam[] = [];
  const push = (role: "user" | "assistant", blocks: ContentBlockParam[]) => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    if (last && last.role === role && Array.isArray(last.content)) last.content.push(...blocks);
    else messages.push({ role, content: [...blocks] });
  };

  for (const item of answeredItems(req.items)) {
    switch (item.role) {
      case "user":
        push("user", [{ type: "text", text: item.text }]);
        break;
      case "tool":
        push("user", [{ type: "tool_result", tool_use_id: item.toolCallId, content: item.output, ...(item.isError ? { is_error: true } : {}) }]);
        break;
      case "assistant": {
        const blocks: ContentBlockParam[] = [];
        for (const r of item.reasoning ?? []) {
          if (r.redactedData) blocks.push({ type: "redacted_thinking", data: r.redactedData });
          else if (r.signature) blocks.push({ type: "thinking", thinking: r.text, signature: r.signature });
        }
        if (item.text) blocks.push({ type: "text", text: item.text });
        for (const c of item.toolCalls ?? []) blocks.push({ type: "tool_use", id: c.id, name: c.name, input: parseArgs(c.argumentsJson) });
        push("assistant", blocks);
        break;
      }
    }
  }

  const tools: Tool[] = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters as Tool["input_schema"] }));
  const system: TextBlockParam[] = req.instructions ? [{ type: "text", text: req.instructions }] : [];

  if (opts.promptCaching) {
    const sys = system.at(-1);
    if (sys) sys.cache_control = EPHEMERAL;
    const tool = tools.at(-1);
    if (tool) tool.cache_control = EPHEMERAL;
    let marked = 0;
    for (let i = messages.length - 1; i >= 0 && marked < 2; i--) {
      const m = messages[i];
      if (m?.role !== "user" || !Array.isArray(m.content)) continue;
      const lastBlock = m.content.at(-1);
      if (lastBlock && (lastBlock.type === "text" || lastBlock.type === "tool_result")) {
        lastBlock.cache_control = EPHEMERAL;
        marked++;
      }
    }
  }

  const maxTokens = req.target.maxOutputTokens ?? defaultMaxTokens(req.target.model);
  const effort = req.reasoningEffort ?? req.target.reasoningEffort;
  const body: MessageCreateParamsStreaming & Record<string, unknown> = {
    model: req.target.model,
    max_tokens: maxTokens,
    messages,
    stream: true,
    ...(system.length ? { system } : {}),
    ...(tools.length ? { tools } : {}),
  };
  if (effort && effort !== "disabled" && opts.sendReasoningEffort) {
    const wanted = opts.thinkingBudgetTokens ?? THINKING_BUDGETS[effort];
    const budget = Math.max(1_024, Math.min(wanted, maxTokens - 1_024));
    if (budget < maxTokens) body.thinking = { type: "enabled", budget_tokens: budget };
  }
  return { ...body, ...opts.extraBody } as MessageCreateParamsStreaming;
}
