/**
 * `POST /v1/chat/completions` (OpenAI Chat Completions): streaming and not, function tools,
 * `stream_options.include_usage`. A target that speaks Chat Completions gets the caller's body
 * and its answer is relayed; for any other the request becomes a neutral call and the answer is
 * rendered from the provider events.
 */
import { z } from "zod";
import type { ChatItem, ProviderEvent, StopReason, ToolSpec } from "@byok/protocol";
import { samplingOf, translated, type CallResult, type NeutralCall } from "../call.js";
import { renamed, respondCall, streamCall, vendorId, type Endpoint, type Relay, type TranslatedStream } from "../endpoint.js";
import { CompatError } from "../errors.js";
import { SseWriter } from "../http.js";
import { invalid, parseBody } from "../validate.js";
import { openAIErrorBody } from "./errors.js";
import { chatEffort } from "./effort.js";
import { chatUsage } from "./usage.js";

const Part = z.looseObject({ type: z.string(), text: z.string().optional() });
const Content = z.union([z.string(), z.array(Part)]).nullish();
const ToolCall = z.object({ id: z.string().min(1), type: z.literal("function").optional(), function: z.object({ name: z.string().min(1), arguments: z.string() }) });
const Message = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool"]),
  content: Content,
  tool_calls: z.array(ToolCall).optional(),
  tool_call_id: z.string().optional(),
});
const FunctionTool = z.object({
  type: z.literal("function"),
  function: z.object({ name: z.string().min(1).max(64), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional(), strict: z.boolean().nullish() }),
});

export const ChatRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(Message).min(1),
  tools: z.array(FunctionTool).optional(),
  tool_choice: z.union([z.enum(["auto", "none"]), z.looseObject({})]).optional(),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  n: z.number().int().nullish(),
  reasoning_effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]).nullish(),
});
type ChatRequest = z.infer<typeof ChatRequestSchema>;
/** What the gateway itself reads of a request it passes through. */
const ChatEnvelope = ChatRequestSchema.pick({ model: true, stream: true, stream_options: true, max_tokens: true, max_completion_tokens: true });

/** Text of a message's content: a string, or text parts (anything else is refused). */
function textOf(content: z.infer<typeof Content>, where: string): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  return content
    .map((p, i) => {
      if ((p.type === "text" || p.type === "input_text") && p.text !== undefined) return p.text;
      throw invalid(`${where}.content[${i}]: content parts of type "${p.type}" are not supported here; send text`, `${where}.content`);
    })
    .join("");
}

/** The Chat request in neutral terms (system and developer messages become the instructions). */
export function chatCall(r: ChatRequest): NeutralCall {
  if (r.n !== undefined && r.n !== null && r.n !== 1) throw invalid("n: only one choice (n = 1) is supported", "n");
  if (typeof r.tool_choice === "object") throw invalid('tool_choice: only "auto" and "none" are supported', "tool_choice");
  const instructions: string[] = [];
  const items: ChatItem[] = [];
  const toolNames = new Map<string, string>();
  r.messages.forEach((m, i) => {
    const where = `messages[${i}]`;
    switch (m.role) {
      case "system":
      case "developer":
        instructions.push(textOf(m.content, where));
        break;
      case "user":
        items.push({ role: "user", text: textOf(m.content, where) });
        break;
      case "assistant": {
        const text = textOf(m.content, where);
        const toolCalls = (m.tool_calls ?? []).map((c) => {
          toolNames.set(c.id, c.function.name);
          return { id: c.id, name: c.function.name, argumentsJson: c.function.arguments };
        });
        items.push({ role: "assistant", ...(text ? { text } : {}), ...(toolCalls.length ? { toolCalls } : {}) });
        break;
      }
      case "tool": {
        const id = m.tool_call_id;
        if (!id) throw invalid(`${where}.tool_call_id: a tool message needs the id of the call it answers`, `${where}.tool_call_id`);
        const name = toolNames.get(id);
        if (!name) throw invalid(`${where}: no earlier assistant tool call has the id ${JSON.stringify(id)}`, `${where}.tool_call_id`);
        items.push({ role: "tool", toolCallId: id, name, output: textOf(m.content, where) });
        break;
      }
    }
  });
  const tools: ToolSpec[] =
    r.tool_choice === "none"
      ? []
      : (r.tools ?? []).map((t) => ({ name: t.function.name, description: t.function.description ?? "", parameters: t.function.parameters ?? { type: "object", properties: {} } }));
  return {
    instructions: instructions.join("\n\n"),
    items,
    tools,
    reasoningEffort: chatEffort(r.reasoning_effort),
    thinkingBudgetTokens: undefined,
    sampling: samplingOf(r),
  };
}

export function finishReason(stop: StopReason | undefined, toolCalls: number): "stop" | "tool_calls" | "length" {
  if (toolCalls > 0 || stop === "tool_use") return "tool_calls";
  return stop === "max_tokens" ? "length" : "stop";
}

/** Streams chunks as the provider events arrive; nothing is written before the first text or tool call. */
class ChatStreamSink implements TranslatedStream {
  private toolIndex = new Map<string, number>();
  private roleSent = false;
  constructor(
    private readonly sse: SseWriter,
    private readonly base: { id: string; object: "chat.completion.chunk"; created: number; model: string },
    private readonly includeUsage: boolean,
  ) {}

  get toolCalls(): number {
    return this.toolIndex.size;
  }

  private delta(delta: Record<string, unknown>): void {
    if (!this.roleSent) {
      this.roleSent = true;
      this.sse.send({ ...this.base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }] });
    }
    this.sse.send({ ...this.base, choices: [{ index: 0, delta, logprobs: null, finish_reason: null }] });
  }

  event(ev: ProviderEvent): void {
    if (ev.type === "text_delta" && ev.text) this.delta({ content: ev.text });
    else if (ev.type === "item_added" && ev.kind === "tool_call") {
      const index = this.toolIndex.size;
      this.toolIndex.set(ev.itemId, index);
      this.delta({ tool_calls: [{ index, id: ev.itemId, type: "function", function: { name: ev.toolName ?? "", arguments: "" } }] });
    } else if (ev.type === "tool_call_delta" && ev.argsDelta) {
      const index = this.toolIndex.get(ev.itemId);
      if (index !== undefined) this.delta({ tool_calls: [{ index, function: { arguments: ev.argsDelta } }] });
    }
  }

  reset(): void {
    this.toolIndex.clear();
  }

  finish(out: CallResult): void {
    if (!this.roleSent) this.delta({});
    this.sse.send({ ...this.base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: finishReason(out.stopReason, this.toolCalls) }] });
    if (this.includeUsage) this.sse.send({ ...this.base, choices: [], usage: chatUsage(out.usage) });
    this.sse.send("[DONE]");
  }
}

/**
 * The vendor's chunks and completion as they came, renamed. The gateway always asks a
 * passthrough stream for usage (the ledger needs it): a caller that did not gets neither the
 * usage chunk nor the `usage` field.
 */
function chatRelay(id: string, model: string, includeUsage: boolean): Relay {
  return {
    event(ev) {
      if (includeUsage) return { data: renamed(ev, id, model) };
      if (Array.isArray(ev["choices"]) && ev["choices"].length === 0) return undefined;
      const { usage: _usage, ...rest } = ev;
      return { data: renamed(rest, id, model) };
    },
    end: "[DONE]",
    response: (r) => renamed(r, id, model),
  };
}

export const chatCompletions: Endpoint = {
  errorBody: openAIErrorBody,
  async serve(ctx) {
    const env = parseBody(ChatEnvelope, ctx.body);
    const neutral = translated(() => chatCall(parseBody(ChatRequestSchema, ctx.body)));
    const id = vendorId("chatcmpl-");
    const created = Math.floor(Date.now() / 1000);
    const includeUsage = env.stream_options?.include_usage === true;
    const call = {
      modelId: env.model, api: "openai-chat" as const, body: ctx.body as Record<string, unknown>, stream: env.stream === true,
      outputCap: env.max_completion_tokens ?? env.max_tokens ?? undefined, neutral,
    };
    const relay = chatRelay(id, env.model, includeUsage);
    if (!call.stream) {
      await respondCall(ctx, id, call, relay, (sink, out) => {
        const toolCalls = sink.items.flatMap((i) => (i.kind === "tool_call" ? [{ id: i.call.id, type: "function", function: { name: i.call.name, arguments: i.call.argumentsJson } }] : []));
        return {
          id,
          object: "chat.completion",
          created,
          model: env.model,
          choices: [{
            index: 0,
            message: { role: "assistant", content: sink.text || (toolCalls.length ? null : ""), refusal: null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
            logprobs: null,
            finish_reason: finishReason(out.stopReason, toolCalls.length),
          }],
          usage: chatUsage(out.usage),
        };
      });
      return;
    }
    const sse = new SseWriter(ctx.res);
    await streamCall(ctx, id, call, sse, {
      translated: neutral instanceof CompatError ? undefined : new ChatStreamSink(sse, { id, object: "chat.completion.chunk", created, model: env.model }, includeUsage),
      relay,
      // OpenAI's in-stream error: a data line holding the error body.
      streamError: (e) => ({ data: openAIErrorBody(e) }),
    });
  },
};
