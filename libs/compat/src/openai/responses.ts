/**
 * `POST /v1/responses` (OpenAI Responses): streaming and not, function tools, reasoning. A
 * target that speaks Responses gets the caller's body and its answer is relayed; for any other
 * the request becomes a neutral call. Stateless: `previous_response_id` is refused (the gateway
 * keeps no response store, and the ids a caller sees are the gateway's); callers send the whole
 * conversation as `input` items.
 */
import { z } from "zod";
import type { ChatItem, OutputItem, ProviderEvent, StopReason, ToolSpec, Usage } from "@byok/protocol";
import { samplingOf, translated, type CallResult, type NeutralCall } from "../call.js";
import { renamed, respondCall, streamCall, vendorId, type Endpoint, type Relay, type TranslatedStream } from "../endpoint.js";
import { CompatError } from "../errors.js";
import { SseWriter } from "../http.js";
import { invalid, parseBody } from "../validate.js";
import { chatEffort } from "./effort.js";
import { openAIErrorBody } from "./errors.js";
import { responsesUsage } from "./usage.js";

const Part = z.looseObject({ type: z.string(), text: z.string().optional() });
const InputItem = z.looseObject({
  type: z.string().optional(),
  role: z.enum(["user", "system", "developer", "assistant"]).optional(),
  content: z.union([z.string(), z.array(Part)]).optional(),
  call_id: z.string().optional(),
  name: z.string().optional(),
  arguments: z.string().optional(),
  output: z.union([z.string(), z.array(Part)]).optional(),
  summary: z.array(z.looseObject({ text: z.string() })).optional(),
  encrypted_content: z.string().nullish(),
  id: z.string().optional(),
});
const FunctionTool = z.object({
  type: z.literal("function"),
  name: z.string().min(1).max(64),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

export const ResponsesRequestSchema = z.looseObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(InputItem)]),
  instructions: z.string().nullish(),
  tools: z.array(FunctionTool).optional(),
  tool_choice: z.union([z.enum(["auto", "none"]), z.looseObject({})]).optional(),
  stream: z.boolean().nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  reasoning: z.object({ effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]).nullish(), summary: z.string().nullish() }).nullish(),
  previous_response_id: z.string().nullish(),
});
type ResponsesRequest = z.infer<typeof ResponsesRequestSchema>;
/** What the gateway itself reads of a request it passes through. */
const ResponsesEnvelope = ResponsesRequestSchema.pick({ model: true, stream: true, max_output_tokens: true, previous_response_id: true });

function partsText(content: string | z.infer<typeof Part>[] | undefined, where: string): string {
  if (content === undefined) return "";
  if (typeof content === "string") return content;
  return content
    .map((p, i) => {
      if ((p.type === "input_text" || p.type === "output_text" || p.type === "text") && p.text !== undefined) return p.text;
      throw invalid(`${where}[${i}]: content parts of type "${p.type}" are not supported here; send text`, where);
    })
    .join("");
}

/** The Responses request in neutral terms; assistant messages, reasoning and function calls in a row form one assistant turn. */
export function responsesCall(r: ResponsesRequest): NeutralCall {
  if (typeof r.tool_choice === "object") throw invalid('tool_choice: only "auto" and "none" are supported', "tool_choice");
  const instructions: string[] = r.instructions ? [r.instructions] : [];
  const items: ChatItem[] = [];
  const toolNames = new Map<string, string>();
  const assistant = (): Extract<ChatItem, { role: "assistant" }> => {
    const last = items.at(-1);
    if (last?.role === "assistant") return last;
    const fresh: Extract<ChatItem, { role: "assistant" }> = { role: "assistant" };
    items.push(fresh);
    return fresh;
  };
  const input = typeof r.input === "string" ? [{ role: "user" as const, content: r.input }] : r.input;
  input.forEach((it, i) => {
    const where = `input[${i}]`;
    const type = it.type ?? "message";
    switch (type) {
      case "message": {
        const text = partsText(it.content, `${where}.content`);
        if (it.role === "system" || it.role === "developer") instructions.push(text);
        else if (it.role === "user") items.push({ role: "user", text });
        else if (it.role === "assistant") {
          const a = assistant();
          a.text = (a.text ?? "") + text;
        } else throw invalid(`${where}.role: a message needs a role`, `${where}.role`);
        break;
      }
      case "function_call": {
        if (!it.call_id || !it.name) throw invalid(`${where}: a function_call needs call_id and name`, where);
        toolNames.set(it.call_id, it.name);
        const a = assistant();
        a.toolCalls = [...(a.toolCalls ?? []), { id: it.call_id, name: it.name, argumentsJson: it.arguments ?? "{}" }];
        break;
      }
      case "function_call_output": {
        const name = it.call_id === undefined ? undefined : toolNames.get(it.call_id);
        if (!it.call_id || !name) throw invalid(`${where}.call_id: no earlier function_call has this call_id`, `${where}.call_id`);
        items.push({ role: "tool", toolCallId: it.call_id, name, output: partsText(it.output, `${where}.output`) });
        break;
      }
      case "reasoning": {
        const a = assistant();
        a.reasoning = [...(a.reasoning ?? []), {
          text: (it.summary ?? []).map((s) => s.text).join("\n\n"),
          ...(it.encrypted_content ? { encryptedContent: it.encrypted_content } : {}),
          ...(it.id ? { providerItemId: it.id } : {}),
        }];
        break;
      }
      default:
        throw invalid(`${where}.type: input items of type "${type}" are not supported here`, `${where}.type`);
    }
  });
  const tools: ToolSpec[] =
    r.tool_choice === "none" ? [] : (r.tools ?? []).map((t) => ({ name: t.name, description: t.description ?? "", parameters: t.parameters ?? { type: "object", properties: {} } }));
  return {
    instructions: instructions.join("\n\n"),
    items,
    tools,
    reasoningEffort: chatEffort(r.reasoning?.effort),
    thinkingBudgetTokens: undefined,
    sampling: samplingOf(r),
  };
}

/** An output item of the Responses API; `done` false while it streams. */
function outputItem(item: OutputItem, done: boolean): Record<string, unknown> {
  const status = done ? "completed" : "in_progress";
  switch (item.kind) {
    case "text":
      return { type: "message", id: `msg_${item.id}`, status, role: "assistant", content: done ? [outputText(item.text)] : [] };
    case "reasoning":
      return {
        type: "reasoning", id: `rs_${item.id}`, summary: done && item.part.text ? [{ type: "summary_text", text: item.part.text }] : [],
        ...(item.part.encryptedContent ? { encrypted_content: item.part.encryptedContent } : {}),
      };
    case "tool_call":
      return { type: "function_call", id: `fc_${item.id}`, call_id: item.call.id, name: item.call.name, arguments: done ? item.call.argumentsJson : "", status };
  }
}

function outputText(text: string) {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}

interface ResponseHead {
  id: string;
  created_at: number;
  model: string;
  r: ResponsesRequest;
}

/** The response object; `output`/`usage` absent while in progress. */
function responseObject(h: ResponseHead, state: { status: "in_progress" | "completed" | "incomplete"; output: Record<string, unknown>[]; usage?: Usage }) {
  return {
    id: h.id,
    object: "response",
    created_at: h.created_at,
    status: state.status,
    error: null,
    incomplete_details: state.status === "incomplete" ? { reason: "max_output_tokens" } : null,
    instructions: h.r.instructions ?? null,
    max_output_tokens: h.r.max_output_tokens ?? null,
    model: h.model,
    output: state.output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: h.r.reasoning?.effort ?? null, summary: h.r.reasoning?.summary ?? null },
    store: false,
    temperature: h.r.temperature ?? null,
    text: { format: { type: "text" } },
    tool_choice: typeof h.r.tool_choice === "string" ? h.r.tool_choice : "auto",
    tools: h.r.tools ?? [],
    top_p: h.r.top_p ?? null,
    truncation: "disabled",
    usage: state.usage ? responsesUsage(state.usage) : null,
    metadata: {},
  };
}

const statusOf = (stop: StopReason | undefined) => (stop === "max_tokens" ? "incomplete" : "completed");

/** Streams Responses events (each with its sequence_number) as the provider events arrive. */
class ResponsesStreamSink implements TranslatedStream {
  private seq = 0;
  private started = false;
  private items = new Map<string, { index: number; item: OutputItem }>();
  private done: Record<string, unknown>[] = [];
  constructor(
    private readonly sse: SseWriter,
    private readonly head: ResponseHead,
  ) {}

  private send(type: string, body: Record<string, unknown>): void {
    if (!this.started) {
      this.started = true;
      this.emit("response.created", { response: responseObject(this.head, { status: "in_progress", output: [] }) });
      this.emit("response.in_progress", { response: responseObject(this.head, { status: "in_progress", output: [] }) });
    }
    this.emit(type, body);
  }

  private emit(type: string, body: Record<string, unknown>): void {
    this.sse.send({ type, sequence_number: this.seq++, ...body }, type);
  }

  event(ev: ProviderEvent): void {
    switch (ev.type) {
      case "item_added": {
        const index = this.items.size;
        const item: OutputItem =
          ev.kind === "text" ? { kind: "text", id: ev.itemId, text: "" }
          : ev.kind === "reasoning" ? { kind: "reasoning", id: ev.itemId, part: { text: "" } }
          : { kind: "tool_call", id: ev.itemId, call: { id: ev.itemId, name: ev.toolName ?? "", argumentsJson: "" } };
        this.items.set(ev.itemId, { index, item });
        const o = outputItem(item, false);
        this.send("response.output_item.added", { output_index: index, item: o });
        if (item.kind === "text") this.send("response.content_part.added", { item_id: o["id"], output_index: index, content_index: 0, part: outputText("") });
        if (item.kind === "reasoning") this.send("response.reasoning_summary_part.added", { item_id: o["id"], output_index: index, summary_index: 0, part: { type: "summary_text", text: "" } });
        return;
      }
      case "text_delta": {
        const s = this.items.get(ev.itemId);
        if (s) this.send("response.output_text.delta", { item_id: `msg_${ev.itemId}`, output_index: s.index, content_index: 0, delta: ev.text, logprobs: [] });
        return;
      }
      case "reasoning_delta": {
        const s = this.items.get(ev.itemId);
        if (s) this.send("response.reasoning_summary_text.delta", { item_id: `rs_${ev.itemId}`, output_index: s.index, summary_index: 0, delta: ev.text });
        return;
      }
      case "tool_call_delta": {
        const s = this.items.get(ev.itemId);
        if (s) this.send("response.function_call_arguments.delta", { item_id: `fc_${ev.itemId}`, output_index: s.index, delta: ev.argsDelta });
        return;
      }
      case "item_done": {
        const s = this.items.get(ev.item.id);
        if (!s) return;
        const o = outputItem(ev.item, true);
        const at = { item_id: o["id"], output_index: s.index };
        if (ev.item.kind === "text") {
          this.send("response.output_text.done", { ...at, content_index: 0, text: ev.item.text, logprobs: [] });
          this.send("response.content_part.done", { ...at, content_index: 0, part: outputText(ev.item.text) });
        } else if (ev.item.kind === "reasoning") {
          this.send("response.reasoning_summary_text.done", { ...at, summary_index: 0, text: ev.item.part.text });
          this.send("response.reasoning_summary_part.done", { ...at, summary_index: 0, part: { type: "summary_text", text: ev.item.part.text } });
        } else {
          this.send("response.function_call_arguments.done", { ...at, arguments: ev.item.call.argumentsJson });
        }
        this.send("response.output_item.done", { output_index: s.index, item: o });
        this.done[s.index] = o;
        return;
      }
      case "completed":
        return;
    }
  }

  reset(): void {
    this.items.clear();
    this.done = [];
  }

  finish(out: CallResult): void {
    const status = statusOf(out.stopReason);
    this.send(status === "completed" ? "response.completed" : "response.incomplete", { response: responseObject(this.head, { status, output: this.done, usage: out.usage }) });
  }

}

/** The Responses in-stream error: an `error` event. */
function responsesStreamError(e: CompatError): { data: Record<string, unknown>; event: string } {
  const body = openAIErrorBody(e).error;
  return { data: { type: "error", code: body.code ?? body.type, message: body.message, param: body.param }, event: "error" };
}

/** The vendor's events and response as they came; every response object in them renamed. */
function responsesRelay(id: string, model: string): Relay {
  return {
    event(ev) {
      const type = String(ev["type"]);
      const response = ev["response"];
      if (typeof response !== "object" || response === null) return { data: ev, event: type };
      return { data: { ...ev, response: renamed(response as Record<string, unknown>, id, model) }, event: type };
    },
    response: (r) => renamed(r, id, model),
  };
}

export const responses: Endpoint = {
  errorBody: openAIErrorBody,
  async serve(ctx) {
    const env = parseBody(ResponsesEnvelope, ctx.body);
    if (env.previous_response_id) throw invalid("previous_response_id: the gateway stores no responses; send the whole conversation in input", "previous_response_id");
    const parsed = translated(() => {
      const r = parseBody(ResponsesRequestSchema, ctx.body);
      return { r, neutral: responsesCall(r) };
    });
    const head = (r: ResponsesRequest): ResponseHead => ({ id, created_at: createdAt, model: env.model, r });
    const id = vendorId("resp_");
    const createdAt = Math.floor(Date.now() / 1000);
    const call = {
      modelId: env.model, api: "openai-responses" as const, body: ctx.body as Record<string, unknown>, stream: env.stream === true,
      outputCap: env.max_output_tokens ?? undefined, neutral: parsed instanceof CompatError ? parsed : parsed.neutral,
    };
    const relay = responsesRelay(id, env.model);
    if (!call.stream) {
      await respondCall(ctx, id, call, relay, (sink, out) =>
        responseObject(head((parsed as { r: ResponsesRequest }).r), { status: statusOf(out.stopReason), output: sink.items.map((i) => outputItem(i, true)), usage: out.usage }));
      return;
    }
    const sse = new SseWriter(ctx.res);
    await streamCall(ctx, id, call, sse, {
      translated: parsed instanceof CompatError ? undefined : new ResponsesStreamSink(sse, head(parsed.r)),
      relay,
      streamError: responsesStreamError,
    });
  },
};
