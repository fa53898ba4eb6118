import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import type { OutputItem, ProviderEvent, StopReason } from "@byok/protocol";
import type { ItemIds } from "../shared/ids.js";
import { ThinkTagSplitter } from "../shared/think-tags.js";
import type { OutputMeter } from "../shared/usage.js";

interface OpenToolCall {
  itemId: string;
  providerId: string | undefined;
  name: string;
  args: string;
}

/**
 * Pure decoder of Chat Completions chunks into normalized events (no I/O).
 *
 * Guarantees: at most one text-or-reasoning item is open at a time (switching kind closes
 * the open one with item_done); tool calls are accumulated by `index` and each gets
 * item_added (with its name) before its argument deltas; tool calls are closed when the
 * finish chunk arrives; `<think>` tags in content are split into reasoning when enabled.
 * Only choice 0 is read (the adapter never asks for `n > 1`).
 */
export class ChatStreamDecoder {
  /** The finish_reason of choice 0, once seen. */
  finishReason: string | undefined;
  /** The last non-null `usage` seen (normally on the final, choice-less chunk). */
  rawUsage: unknown;

  /** The model that answered, as the provider named it. */
  responseModel: string | undefined;
  private open: { kind: "text" | "reasoning"; itemId: string; text: string } | undefined;
  private readonly calls = new Map<number, OpenToolCall>();
  private readonly callOrder: OpenToolCall[] = [];
  private callsClosed = false;
  private readonly think: ThinkTagSplitter | undefined;

  constructor(
    private readonly ids: ItemIds,
    private readonly meter: OutputMeter,
    opts: { thinkTags: boolean },
  ) {
    this.think = opts.thinkTags ? new ThinkTagSplitter() : undefined;
  }

  get toolCallCount(): number {
    return this.callOrder.length;
  }

  push(chunk: ChatCompletionChunk): ProviderEvent[] {
    const out: ProviderEvent[] = [];
    if (chunk.usage) this.rawUsage = chunk.usage;
    if (chunk.model) this.responseModel = chunk.model;
    const choice = chunk.choices?.find((c) => c.index === 0) ?? chunk.choices?.[0];
    if (!choice) return out;
    const delta = (choice.delta ?? {}) as ChatCompletionChunk.Choice.Delta & Record<string, unknown>;

    const reasoning = firstString(delta["reasoning_content"], delta["reasoning"]);
    if (reasoning) this.appendText("reasoning", reasoning, out);

    const content = firstString(delta.content, delta.refusal);
    if (content) {
      if (this.think) {
        for (const seg of this.think.push(content)) this.appendText(seg.reasoning ? "reasoning" : "text", seg.text, out);
      } else {
        this.appendText("text", content, out);
      }
    }

    for (const tc of delta.tool_calls ?? []) this.appendToolCall(tc, out);

    if (choice.finish_reason) {
      this.finishReason = choice.finish_reason;
      this.flushThink(out);
      this.closeOpen(out);
      this.closeCalls(out);
    }
    return out;
  }

  /** Closes whatever is still open after a stream that completed normally. */
  end(): ProviderEvent[] {
    const out: ProviderEvent[] = [];
    this.flushThink(out);
    this.closeOpen(out);
    this.closeCalls(out);
    return out;
  }

  stopReason(): StopReason {
    switch (this.finishReason) {
      case "tool_calls":
      case "function_call":
        return "tool_use";
      case "length":
        return "max_tokens";
      case "stop":
      case undefined:
        return this.callOrder.length ? "tool_use" : "end_turn";
      default:
        return "other";
    }
  }

  private flushThink(out: ProviderEvent[]): void {
    if (!this.think) return;
    for (const seg of this.think.flush()) this.appendText(seg.reasoning ? "reasoning" : "text", seg.text, out);
  }

  private appendText(kind: "text" | "reasoning", text: string, out: ProviderEvent[]): void {
    if (!text) return;
    if (this.open && this.open.kind !== kind) this.closeOpen(out);
    if (!this.open) {
      const itemId = this.ids.next(kind === "text" ? "msg" : "rs");
      this.open = { kind, itemId, text: "" };
      out.push({ type: "item_added", itemId, kind });
    }
    this.open.text += text;
    this.meter.add(text, kind === "reasoning");
    out.push(kind === "text" ? { type: "text_delta", itemId: this.open.itemId, text } : { type: "reasoning_delta", itemId: this.open.itemId, text });
  }

  private closeOpen(out: ProviderEvent[]): void {
    const o = this.open;
    if (!o) return;
    this.open = undefined;
    const item: OutputItem =
      o.kind === "text" ? { kind: "text", id: o.itemId, text: o.text } : { kind: "reasoning", id: o.itemId, part: { text: o.text } };
    out.push({ type: "item_done", item });
  }

  private appendToolCall(tc: ChatCompletionChunk.Choice.Delta.ToolCall, out: ProviderEvent[]): void {
    // Some compatible servers omit `index`; fall back to the provider id, then to "the last call".
    let index = typeof tc.index === "number" ? tc.index : undefined;
    if (index === undefined) {
      const known = tc.id ? [...this.calls.entries()].find(([, c]) => c.providerId === tc.id) : undefined;
      index = known ? known[0] : tc.id || this.calls.size === 0 ? this.calls.size : this.calls.size - 1;
    }
    let call = this.calls.get(index);
    if (!call) {
      this.closeOpen(out);
      call = { itemId: this.ids.next("tc"), providerId: tc.id, name: tc.function?.name ?? "", args: "" };
      this.calls.set(index, call);
      this.callOrder.push(call);
      out.push({ type: "item_added", itemId: call.itemId, kind: "tool_call", ...(call.name ? { toolName: call.name } : {}) });
      this.meter.add(call.name);
    } else if (tc.function?.name && !call.name) {
      call.name = tc.function.name;
      this.meter.add(call.name);
    }
    const piece = tc.function?.arguments;
    if (piece) {
      call.args += piece;
      this.meter.add(piece);
      out.push({ type: "tool_call_delta", itemId: call.itemId, argsDelta: piece });
    }
  }

  private closeCalls(out: ProviderEvent[]): void {
    if (this.callsClosed) return;
    this.callsClosed = true;
    for (const c of this.callOrder) {
      out.push({ type: "item_done", item: { kind: "tool_call", id: c.itemId, call: { id: c.itemId, name: c.name, argumentsJson: c.args } } });
    }
  }
}

function firstString(...vals: unknown[]): string | undefined {
  for (const v of vals) if (typeof v === "string" && v !== "") return v;
  return undefined;
}
