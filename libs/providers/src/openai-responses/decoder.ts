import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import type { ProviderEvent, StopReason } from "@byok/protocol";
import type { ItemIds } from "../shared/ids.js";
import { isRecord, type OutputMeter } from "../shared/usage.js";

type Tracked =
  | { kind: "text"; itemId: string; text: string }
  | { kind: "reasoning"; itemId: string; text: string }
  | { kind: "tool_call"; itemId: string; name: string; args: string };

/** How the response ended, once a terminal event arrived. */
export type ResponsesTerminal =
  | { kind: "completed"; rawUsage: unknown }
  | { kind: "incomplete"; reason: string | undefined; rawUsage: unknown }
  | { kind: "failed"; error: { code?: unknown; message?: unknown } | null | undefined; rawUsage: unknown };

/**
 * Pure decoder of Responses stream events into normalized events (no I/O).
 *
 * Items follow the provider's own lifecycle: `output_item.added` → item_added, content
 * deltas → text/reasoning/tool-call deltas, `output_item.done` → item_done with the final
 * item (full text from the done item, encrypted reasoning and provider item id kept for
 * replay). Reasoning summary parts after the first are separated by a blank line. Item
 * types the gateway does not use (web search, file search…) are skipped.
 */
export class ResponsesStreamDecoder {
  terminal: ResponsesTerminal | undefined;
  toolCallCount = 0;
  /** The model that answered, as the provider named it. */
  responseModel: string | undefined;
  private readonly items = new Map<string, Tracked>();

  constructor(
    private readonly ids: ItemIds,
    private readonly meter: OutputMeter,
  ) {}

  /** Usage reported so far (only terminal events carry it). */
  get rawUsage(): unknown {
    return this.terminal?.rawUsage;
  }

  push(ev: ResponseStreamEvent): ProviderEvent[] {
    const out: ProviderEvent[] = [];
    switch (ev.type) {
      case "response.output_item.added":
        this.add(ev.item as unknown as Record<string, unknown>, out);
        break;
      case "response.output_text.delta":
      case "response.refusal.delta":
        this.delta(ev.item_id, "text", ev.delta, out);
        break;
      case "response.reasoning_summary_part.added":
        if (ev.summary_index > 0) this.delta(ev.item_id, "reasoning", "\n\n", out);
        break;
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        this.delta(ev.item_id, "reasoning", ev.delta, out);
        break;
      case "response.function_call_arguments.delta":
        this.delta(ev.item_id, "tool_call", ev.delta, out);
        break;
      case "response.output_item.done":
        this.done(ev.item as unknown as Record<string, unknown>, out);
        break;
      case "response.completed":
        this.responseModel = ev.response.model || undefined;
        this.terminal = { kind: "completed", rawUsage: ev.response.usage ?? undefined };
        break;
      case "response.incomplete":
        this.terminal = { kind: "incomplete", reason: ev.response.incomplete_details?.reason ?? undefined, rawUsage: ev.response.usage ?? undefined };
        break;
      case "response.failed":
        this.terminal = { kind: "failed", error: ev.response.error, rawUsage: ev.response.usage ?? undefined };
        break;
      default:
        break;
    }
    return out;
  }

  stopReason(): StopReason {
    if (this.terminal?.kind === "incomplete") return this.terminal.reason === "max_output_tokens" ? "max_tokens" : "other";
    return this.toolCallCount > 0 ? "tool_use" : "end_turn";
  }

  private add(item: Record<string, unknown>, out: ProviderEvent[]): Tracked | undefined {
    const pid = typeof item["id"] === "string" ? item["id"] : undefined;
    if (!pid) return undefined;
    const existing = this.items.get(pid);
    if (existing) return existing;
    let t: Tracked;
    switch (item["type"]) {
      case "message":
        t = { kind: "text", itemId: this.ids.next("msg"), text: "" };
        out.push({ type: "item_added", itemId: t.itemId, kind: "text" });
        break;
      case "reasoning":
        t = { kind: "reasoning", itemId: this.ids.next("rs"), text: "" };
        out.push({ type: "item_added", itemId: t.itemId, kind: "reasoning" });
        break;
      case "function_call": {
        const name = typeof item["name"] === "string" ? item["name"] : "";
        t = { kind: "tool_call", itemId: this.ids.next("tc"), name, args: "" };
        this.meter.add(name);
        out.push({ type: "item_added", itemId: t.itemId, kind: "tool_call", ...(name ? { toolName: name } : {}) });
        break;
      }
      default:
        return undefined;
    }
    this.items.set(pid, t);
    return t;
  }

  private delta(providerItemId: string, kind: Tracked["kind"], text: string, out: ProviderEvent[]): void {
    const t = this.items.get(providerItemId);
    if (!t || t.kind !== kind || !text) return;
    switch (t.kind) {
      case "text":
        t.text += text;
        this.meter.add(text);
        out.push({ type: "text_delta", itemId: t.itemId, text });
        break;
      case "reasoning":
        t.text += text;
        this.meter.add(text, true);
        out.push({ type: "reasoning_delta", itemId: t.itemId, text });
        break;
      case "tool_call":
        t.args += text;
        this.meter.add(text);
        out.push({ type: "tool_call_delta", itemId: t.itemId, argsDelta: text });
        break;
    }
  }

  private done(item: Record<string, unknown>, out: ProviderEvent[]): void {
    const t = this.add(item, out);
    if (!t) return;
    switch (t.kind) {
      case "text": {
        const parts = Array.isArray(item["content"]) ? item["content"] : [];
        const full = parts
          .map((p: unknown) => (isRecord(p) && typeof p["text"] === "string" ? p["text"] : isRecord(p) && typeof p["refusal"] === "string" ? p["refusal"] : ""))
          .join("");
        out.push({ type: "item_done", item: { kind: "text", id: t.itemId, text: full || t.text } });
        break;
      }
      case "reasoning": {
        const summary = Array.isArray(item["summary"]) ? item["summary"] : [];
        const text = summary.map((s: unknown) => (isRecord(s) && typeof s["text"] === "string" ? s["text"] : "")).join("\n\n");
        const enc = typeof item["encrypted_content"] === "string" ? item["encrypted_content"] : undefined;
        out.push({
          type: "item_done",
          item: {
            kind: "reasoning",
            id: t.itemId,
            part: { text: text || t.text, ...(enc ? { encryptedContent: enc } : {}), providerItemId: String(item["id"]) },
          },
        });
        break;
      }
      case "tool_call": {
        const args = typeof item["arguments"] === "string" ? item["arguments"] : t.args;
        const name = typeof item["name"] === "string" && item["name"] ? item["name"] : t.name;
        this.toolCallCount++;
        out.push({ type: "item_done", item: { kind: "tool_call", id: t.itemId, call: { id: t.itemId, name, argumentsJson: args } } });
        break;
      }
    }
  }
}
