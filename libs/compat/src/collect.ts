import type { OutputItem, ProviderEvent } from "@byok/protocol";
import type { CallSink } from "./call.js";

/**
 * The sink of a non-streaming answer: the finished output items of a translated attempt, or
 * the vendor's own response of a passthrough attempt.
 */
export class Collector implements CallSink {
  items: OutputItem[] = [];
  response: Record<string, unknown> | undefined;
  readonly committed = false;
  /** Nothing is written until the answer is complete. */
  readonly firstWriteAt = undefined;

  begin(): void {
    this.items = [];
    this.response = undefined;
  }

  event(ev: ProviderEvent): void {
    if (ev.type === "item_done") this.items.push(ev.item);
  }

  vendorEvent(ev: Record<string, unknown>): void {
    this.response = ev;
  }

  get text(): string {
    return this.items.flatMap((i) => (i.kind === "text" ? [i.text] : [])).join("");
  }
}
