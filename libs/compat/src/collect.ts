import type { OutputItem, ProviderEvent } from "@byok/protocol";
import type { CallSink } from "./call.js";

/** The sink of a non-streaming answer: keeps the finished output items of the current attempt, in order. */
export class Collector implements CallSink {
  items: OutputItem[] = [];
  readonly committed = false;

  event(ev: ProviderEvent): void {
    if (ev.type === "item_done") this.items.push(ev.item);
  }

  reset(): void {
    this.items = [];
  }

  get text(): string {
    return this.items.flatMap((i) => (i.kind === "text" ? [i.text] : [])).join("");
  }
}
