import type { RawMessageStreamEvent } from "@anthropic-ai/sdk/resources/messages";
import type { ProviderEvent, StopReason } from "@byok/protocol";
import type { ItemIds } from "../shared/ids.js";
import type { OutputMeter } from "../shared/usage.js";
import { AnthropicUsageAccumulator } from "./usage.js";

type Block =
  | { kind: "text"; itemId: string; text: string }
  | { kind: "reasoning"; itemId: string; text: string; signature: string; redactedData?: string }
  | { kind: "tool_call"; itemId: string; name: string; args: string }
  | { kind: "ignored" };

/**
 * Pure decoder of Anthropic Messages stream events (also Bedrock's, which carry the same
 * events) into normalized events.
 *
 * Each content block is one item: `content_block_start` → item_added; deltas → text /
 * reasoning / tool-call deltas (`signature_delta` is kept, not emitted); `content_block_stop`
 * → item_done with the full block (thinking keeps its signature, redacted thinking its data,
 * so both can be replayed). Usage accumulates from message_start and message_delta.
 * Completion is `message_stop`.
 */
export class AnthropicStreamDecoder {
  readonly usage = new AnthropicUsageAccumulator();
  stopReasonRaw: string | undefined;
  /** The model that answered, as the provider named it. */
  responseModel: string | undefined;
  stopped = false;
  toolCallCount = 0;
  private readonly blocks = new Map<number, Block>();

  constructor(
    private readonly ids: ItemIds,
    private readonly meter: OutputMeter,
  ) {}

  push(ev: RawMessageStreamEvent): ProviderEvent[] {
    const out: ProviderEvent[] = [];
    switch (ev.type) {
      case "message_start":
        this.usage.add(ev.message.usage);
        this.responseModel = ev.message.model || undefined;
        break;
      case "content_block_start":
        this.start(ev.index, ev.content_block as unknown as Record<string, unknown>, out);
        break;
      case "content_block_delta":
        this.delta(ev.index, ev.delta as unknown as Record<string, unknown>, out);
        break;
      case "content_block_stop":
        this.stop(ev.index, out);
        break;
      case "message_delta":
        this.stopReasonRaw = ev.delta.stop_reason ?? this.stopReasonRaw;
        this.usage.add(ev.usage);
        break;
      case "message_stop":
        this.stopped = true;
        break;
    }
    return out;
  }

  stopReason(): StopReason {
    switch (this.stopReasonRaw) {
      case "end_turn":
        return this.toolCallCount ? "tool_use" : "end_turn";
      case "tool_use":
        return "tool_use";
      case "max_tokens":
      case "model_context_window_exceeded":
        return "max_tokens";
      default:
        return this.toolCallCount ? "tool_use" : "other";
    }
  }

  private start(index: number, cb: Record<string, unknown>, out: ProviderEvent[]): void {
    let b: Block;
    switch (cb["type"]) {
      case "text":
        b = { kind: "text", itemId: this.ids.next("msg"), text: "" };
        out.push({ type: "item_added", itemId: b.itemId, kind: "text" });
        if (typeof cb["text"] === "string" && cb["text"]) this.delta(index, { type: "text_delta", text: cb["text"] }, out, b);
        break;
      case "thinking":
        b = { kind: "reasoning", itemId: this.ids.next("rs"), text: "", signature: typeof cb["signature"] === "string" ? cb["signature"] : "" };
        out.push({ type: "item_added", itemId: b.itemId, kind: "reasoning" });
        break;
      case "redacted_thinking":
        b = { kind: "reasoning", itemId: this.ids.next("rs"), text: "", signature: "", redactedData: typeof cb["data"] === "string" ? cb["data"] : "" };
        out.push({ type: "item_added", itemId: b.itemId, kind: "reasoning" });
        break;
      case "tool_use": {
        const name = typeof cb["name"] === "string" ? cb["name"] : "";
        b = { kind: "tool_call", itemId: this.ids.next("tc"), name, args: "" };
        this.meter.add(name);
        out.push({ type: "item_added", itemId: b.itemId, kind: "tool_call", ...(name ? { toolName: name } : {}) });
        break;
      }
      default:
        b = { kind: "ignored" };
    }
    this.blocks.set(index, b);
  }

  private delta(index: number, d: Record<string, unknown>, out: ProviderEvent[], known?: Block): void {
    const b = known ?? this.blocks.get(index);
    if (!b) return;
    const str = (k: string) => (typeof d[k] === "string" ? (d[k] as string) : "");
    switch (d["type"]) {
      case "text_delta":
        if (b.kind === "text" && str("text")) {
          b.text += str("text");
          this.meter.add(str("text"));
          out.push({ type: "text_delta", itemId: b.itemId, text: str("text") });
        }
        break;
      case "thinking_delta":
        if (b.kind === "reasoning" && str("thinking")) {
          b.text += str("thinking");
          this.meter.add(str("thinking"), true);
          out.push({ type: "reasoning_delta", itemId: b.itemId, text: str("thinking") });
        }
        break;
      case "signature_delta":
        if (b.kind === "reasoning") b.signature += str("signature");
        break;
      case "input_json_delta":
        if (b.kind === "tool_call" && str("partial_json")) {
          b.args += str("partial_json");
          this.meter.add(str("partial_json"));
          out.push({ type: "tool_call_delta", itemId: b.itemId, argsDelta: str("partial_json") });
        }
        break;
      default:
        break;
    }
  }

  private stop(index: number, out: ProviderEvent[]): void {
    const b = this.blocks.get(index);
    this.blocks.delete(index);
    if (!b) return;
    switch (b.kind) {
      case "text":
        out.push({ type: "item_done", item: { kind: "text", id: b.itemId, text: b.text } });
        break;
      case "reasoning":
        out.push({
          type: "item_done",
          item: {
            kind: "reasoning",
            id: b.itemId,
            part: { text: b.text, ...(b.signature ? { signature: b.signature } : {}), ...(b.redactedData !== undefined ? { redactedData: b.redactedData } : {}) },
          },
        });
        break;
      case "tool_call":
        this.toolCallCount++;
        out.push({ type: "item_done", item: { kind: "tool_call", id: b.itemId, call: { id: b.itemId, name: b.name, argumentsJson: b.args || "{}" } } });
        break;
      case "ignored":
        break;
    }
  }
}

