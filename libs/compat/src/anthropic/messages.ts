/**
 * `POST /v1/messages` (Anthropic Messages): streaming and not, tools, extended thinking, and
 * `POST /v1/messages/count_tokens`. A target that speaks Messages gets the caller's body and its
 * answer is relayed; for any other the request becomes a neutral call and the answer is
 * rendered from the provider events.
 */
import { z } from "zod";
import { estimateInputTokens } from "@byok/providers";
import { ProviderError, runErrorFromProvider, type ChatItem, type OutputItem, type ProviderEvent, type ReasoningEffort, type ReasoningPart, type StopReason, type ToolSpec, type Usage } from "@byok/protocol";
import { samplingOf, speaks, translated, type CallResult, type NeutralCall } from "../call.js";
import { renamed, respondCall, streamCall, vendorId, type Endpoint, type Relay, type TranslatedStream } from "../endpoint.js";
import { CompatError, compatErrorFromRun } from "../errors.js";
import { sendJson, SseWriter } from "../http.js";
import { invalid, parseBody } from "../validate.js";
import { anthropicErrorBody } from "./errors.js";

const Block = z.looseObject({ type: z.string() });
const Content = z.union([z.string(), z.array(Block)]);
const Message = z.object({ role: z.enum(["user", "assistant"]), content: Content });
const Tool = z.looseObject({ name: z.string().min(1).max(64), description: z.string().optional(), input_schema: z.record(z.string(), z.unknown()), type: z.string().optional() });
const System = z.union([z.string(), z.array(z.looseObject({ type: z.literal("text"), text: z.string() }))]);
const Thinking = z.union([
  z.object({ type: z.literal("enabled"), budget_tokens: z.number().int().min(1024) }),
  z.object({ type: z.literal("disabled") }),
]);

const CountTokensSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(Message).min(1),
  system: System.optional(),
  tools: z.array(Tool).optional(),
  thinking: Thinking.optional(),
  tool_choice: z.looseObject({ type: z.string() }).optional(),
});
const MessagesSchema = CountTokensSchema.extend({
  max_tokens: z.number().int().positive(),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
});
type CountTokensRequest = z.infer<typeof CountTokensSchema>;
/** What the gateway itself reads of a request it passes through. */
const MessagesEnvelope = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().positive(),
  stream: z.boolean().optional(),
  thinking: z.looseObject({ type: z.string() }).optional(),
});

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** Text of a tool_result's content: a string or text blocks. */
function resultText(content: unknown, where: string): string {
  if (content === undefined) return "";
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw invalid(`${where}.content: a string or text blocks`);
  return content
    .map((b: unknown, i) => {
      const block = b as { type?: unknown; text?: unknown };
      if (block.type === "text" && typeof block.text === "string") return block.text;
      throw invalid(`${where}.content[${i}]: only text blocks are supported in tool results`);
    })
    .join("");
}

/** Budget tokens → the gateway's effort scale (the exact budget still goes to Anthropic targets). */
function effortOfBudget(budget: number): ReasoningEffort {
  if (budget <= 4_096) return "low";
  if (budget <= 12_000) return "medium";
  if (budget <= 24_000) return "high";
  return budget <= 40_000 ? "xhigh" : "max";
}

/** The Messages request in neutral terms. */
export function messagesCall(r: CountTokensRequest & { max_tokens?: number; temperature?: number | undefined; top_p?: number | undefined }): NeutralCall {
  const tc = r.tool_choice?.type;
  if (tc !== undefined && tc !== "auto" && tc !== "none") throw invalid('tool_choice: only "auto" and "none" are supported');
  const instructions = r.system === undefined ? "" : typeof r.system === "string" ? r.system : r.system.map((b) => b.text).join("\n\n");
  const items: ChatItem[] = [];
  const toolNames = new Map<string, string>();
  r.messages.forEach((m, i) => {
    const where = `messages[${i}]`;
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    if (m.role === "user") {
      let text = "";
      const flush = () => {
        if (text) items.push({ role: "user", text });
        text = "";
      };
      blocks.forEach((b, j) => {
        const bw = `${where}.content[${j}]`;
        if (b.type === "text") text += str(b["text"]) ?? "";
        else if (b.type === "tool_result") {
          flush();
          const id = str(b["tool_use_id"]);
          const name = id === undefined ? undefined : toolNames.get(id);
          if (id === undefined || name === undefined) throw invalid(`${bw}.tool_use_id: no earlier tool_use block has this id`);
          items.push({ role: "tool", toolCallId: id, name, output: resultText(b["content"], bw), ...(b["is_error"] === true ? { isError: true } : {}) });
        } else throw invalid(`${bw}: content blocks of type "${b.type}" are not supported here; send text or tool_result`);
      });
      flush();
      return;
    }
    let text = "";
    const reasoning: ReasoningPart[] = [];
    const toolCalls: { id: string; name: string; argumentsJson: string }[] = [];
    blocks.forEach((b, j) => {
      const bw = `${where}.content[${j}]`;
      if (b.type === "text") text += str(b["text"]) ?? "";
      else if (b.type === "thinking") reasoning.push({ text: str(b["thinking"]) ?? "", ...(str(b["signature"]) ? { signature: str(b["signature"])! } : {}) });
      else if (b.type === "redacted_thinking") reasoning.push({ text: "", redactedData: str(b["data"]) ?? "" });
      else if (b.type === "tool_use") {
        const id = str(b["id"]);
        const name = str(b["name"]);
        if (!id || !name) throw invalid(`${bw}: a tool_use block needs an id and a name`);
        toolNames.set(id, name);
        toolCalls.push({ id, name, argumentsJson: JSON.stringify(b["input"] ?? {}) });
      } else throw invalid(`${bw}: content blocks of type "${b.type}" are not supported here`);
    });
    items.push({ role: "assistant", ...(text ? { text } : {}), ...(reasoning.length ? { reasoning } : {}), ...(toolCalls.length ? { toolCalls } : {}) });
  });
  const tools: ToolSpec[] = tc === "none" ? [] : (r.tools ?? []).map((t) => ({ name: t.name, description: t.description ?? "", parameters: t.input_schema }));
  const thinking = r.thinking?.type === "enabled" ? r.thinking.budget_tokens : undefined;
  if (thinking !== undefined && r.max_tokens !== undefined && thinking >= r.max_tokens) {
    throw invalid("thinking.budget_tokens: must be less than max_tokens");
  }
  return {
    instructions,
    items,
    tools,
    reasoningEffort: thinking !== undefined ? effortOfBudget(thinking) : r.thinking?.type === "disabled" ? "disabled" : undefined,
    thinkingBudgetTokens: thinking,
    sampling: samplingOf(r),
  };
}

function stopReason(stop: StopReason | undefined, toolCalls: number): "end_turn" | "tool_use" | "max_tokens" {
  if (toolCalls > 0 || stop === "tool_use") return "tool_use";
  return stop === "max_tokens" ? "max_tokens" : "end_turn";
}

function anthropicUsage(u: Usage) {
  return { input_tokens: u.inputTokens, output_tokens: u.outputTokens, cache_creation_input_tokens: u.cacheWriteTokens, cache_read_input_tokens: u.cacheReadTokens };
}

/** Parses a model's argument JSON for a tool_use block's `input` (an object, as Anthropic requires). */
function toolInput(json: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(json || "{}");
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return { _raw: json };
  }
}

function contentBlock(item: OutputItem, withThinking: boolean): Record<string, unknown> | undefined {
  switch (item.kind) {
    case "text":
      return { type: "text", text: item.text };
    case "reasoning":
      if (!withThinking) return undefined;
      return item.part.redactedData ? { type: "redacted_thinking", data: item.part.redactedData } : { type: "thinking", thinking: item.part.text, signature: item.part.signature ?? "" };
    case "tool_call":
      return { type: "tool_use", id: item.call.id, name: item.call.name, input: toolInput(item.call.argumentsJson) };
  }
}

/**
 * Streams Anthropic's event sequence as the provider events arrive: message_start with the
 * first content block, then content_block_start / _delta / _stop per block, message_delta with
 * the stop reason and usage, message_stop. Thinking blocks only when the caller enabled thinking.
 */
class MessagesStreamSink implements TranslatedStream {
  private blocks = new Map<string, { index: number; kind: OutputItem["kind"] }>();
  private next = 0;
  private started = false;
  private toolCalls = 0;
  constructor(
    private readonly sse: SseWriter,
    private readonly message: { id: string; model: string; estimatedInputTokens: number },
    private readonly withThinking: boolean,
  ) {}

  private start(): void {
    if (this.started) return;
    this.started = true;
    const { id, model, estimatedInputTokens } = this.message;
    this.sse.send({
      type: "message_start",
      message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: estimatedInputTokens, output_tokens: 1 } },
    }, "message_start");
  }

  private send(ev: Record<string, unknown> & { type: string }): void {
    this.start();
    this.sse.send(ev, ev.type);
  }

  event(ev: ProviderEvent): void {
    switch (ev.type) {
      case "item_added": {
        if (ev.kind === "reasoning" && !this.withThinking) return;
        const index = this.next++;
        this.blocks.set(ev.itemId, { index, kind: ev.kind });
        const block =
          ev.kind === "text" ? { type: "text", text: "" } : ev.kind === "reasoning" ? { type: "thinking", thinking: "", signature: "" } : { type: "tool_use", id: ev.itemId, name: ev.toolName ?? "", input: {} };
        if (ev.kind === "tool_call") this.toolCalls++;
        this.send({ type: "content_block_start", index, content_block: block });
        return;
      }
      case "text_delta":
      case "reasoning_delta":
      case "tool_call_delta": {
        const b = this.blocks.get(ev.itemId);
        if (!b) return;
        const delta =
          ev.type === "text_delta" ? { type: "text_delta", text: ev.text } : ev.type === "reasoning_delta" ? { type: "thinking_delta", thinking: ev.text } : { type: "input_json_delta", partial_json: ev.argsDelta };
        this.send({ type: "content_block_delta", index: b.index, delta });
        return;
      }
      case "item_done": {
        const b = this.blocks.get(ev.item.id);
        if (!b) return;
        if (ev.item.kind === "reasoning" && ev.item.part.signature) this.send({ type: "content_block_delta", index: b.index, delta: { type: "signature_delta", signature: ev.item.part.signature } });
        this.send({ type: "content_block_stop", index: b.index });
        return;
      }
      case "completed":
        return;
    }
  }

  reset(): void {
    this.blocks.clear();
    this.next = 0;
    this.toolCalls = 0;
  }

  finish(out: CallResult): void {
    this.send({ type: "message_delta", delta: { stop_reason: stopReason(out.stopReason, this.toolCalls), stop_sequence: null }, usage: anthropicUsage(out.usage) });
    this.send({ type: "message_stop" });
  }
}

/** The vendor's events and message as they came; the message renamed. */
function messagesRelay(id: string, model: string): Relay {
  return {
    event(ev) {
      const type = String(ev["type"]);
      const message = ev["message"];
      if (type !== "message_start" || typeof message !== "object" || message === null) return { data: ev, event: type };
      return { data: { ...ev, message: renamed(message as Record<string, unknown>, id, model) }, event: type };
    },
    response: (r) => renamed(r, id, model),
  };
}

export const messages: Endpoint = {
  errorBody: anthropicErrorBody,
  async serve(ctx) {
    const env = parseBody(MessagesEnvelope, ctx.body);
    const neutral = translated(() => messagesCall(parseBody(MessagesSchema, ctx.body)));
    const id = vendorId("msg_");
    const withThinking = env.thinking?.type === "enabled";
    const call = { modelId: env.model, api: "anthropic-messages" as const, body: ctx.body as Record<string, unknown>, stream: env.stream === true, outputCap: env.max_tokens, neutral };
    const relay = messagesRelay(id, env.model);
    if (!call.stream) {
      await respondCall(ctx, id, call, relay, (sink, out) => {
        const content = sink.items.flatMap((i) => contentBlock(i, withThinking) ?? []);
        const toolCalls = sink.items.filter((i) => i.kind === "tool_call").length;
        return { id, type: "message", role: "assistant", model: env.model, content, stop_reason: stopReason(out.stopReason, toolCalls), stop_sequence: null, usage: anthropicUsage(out.usage) };
      });
      return;
    }
    const sse = new SseWriter(ctx.res);
    await streamCall(ctx, id, call, sse, {
      translated: neutral instanceof CompatError ? undefined : new MessagesStreamSink(sse, { id, model: env.model, estimatedInputTokens: estimateInputTokens(neutral, env.model) }, withThinking),
      relay,
      // Anthropic's in-stream error: an `error` event holding the error body.
      streamError: (e) => ({ data: anthropicErrorBody(e), event: "error" }),
    });
  },
};

/**
 * `POST /v1/messages/count_tokens`: the model must have a route for the tenant, whose first
 * target decides the count (docs/compat.md "Token counting"). An Anthropic target is asked
 * itself (its counting API, through the SDK, with the caller's body); any other gets the
 * gateway's one token estimator over the translated request (the family's tokenizer for OpenAI
 * models, about four characters per token otherwise), the one budget reservations use.
 */
export const countTokens: Endpoint = {
  errorBody: anthropicErrorBody,
  async serve(ctx) {
    const env = parseBody(CountTokensSchema.pick({ model: true, messages: true }), ctx.body);
    const resolution = await ctx.deps.resolveTargets(env.model, ctx.principal.tenantId);
    if (!resolution.ok) throw compatErrorFromRun(resolution.error, env.model);
    const target = resolution.targets[0]!;
    const adapter = ctx.deps.adapterFor(target.kind);
    if (speaks(target.kind, "anthropic-messages") && adapter.countTokens) {
      try {
        const inputTokens = await adapter.countTokens({ target, body: ctx.body as Record<string, unknown>, signal: ctx.signal });
        sendJson(ctx.res, 200, { input_tokens: inputTokens });
      } catch (err) {
        if (!(err instanceof ProviderError)) throw err;
        throw compatErrorFromRun(runErrorFromProvider(err, target.credentialsSource), env.model);
      }
      return;
    }
    const call = messagesCall(parseBody(CountTokensSchema, ctx.body));
    sendJson(ctx.res, 200, { input_tokens: estimateInputTokens(call, target.model) });
  },
};
