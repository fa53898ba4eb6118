import type { ChatItem, ModelCallRequest, Usage } from "../types.js";

/** Rough tokens for text when the provider reports none: about four characters per token. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

function itemChars(item: ChatItem): number {
  switch (item.role) {
    case "user":
      return item.text.length;
    case "tool":
      return item.output.length + item.name.length;
    case "assistant":
      return (
        (item.text?.length ?? 0) +
        (item.reasoning ?? []).reduce((n, r) => n + r.text.length, 0) +
        (item.toolCalls ?? []).reduce((n, c) => n + c.name.length + c.argumentsJson.length, 0)
      );
  }
}

/** Characters of everything a request sends as model input (instructions, history, tool schemas). */
export function requestChars(req: Pick<ModelCallRequest, "instructions" | "items" | "tools">): number {
  return (
    req.instructions.length +
    req.items.reduce((n, it) => n + itemChars(it), 0) +
    req.tools.reduce((n, t) => n + t.name.length + t.description.length + JSON.stringify(t.parameters).length, 0)
  );
}

/** Counts the characters of output a pass produced, for estimates when usage never arrives. */
export class OutputMeter {
  outputChars = 0;
  reasoningChars = 0;
  add(text: string, reasoning = false): void {
    this.outputChars += text.length;
    if (reasoning) this.reasoningChars += text.length;
  }
  get any(): boolean {
    return this.outputChars > 0;
  }
}

/** An estimate marked `estimated: true` (normalized like real usage: reasoning counted inside output). */
export function estimateUsage(inputChars: number, meter: OutputMeter): Usage {
  return {
    inputTokens: estimateTokens(inputChars),
    outputTokens: estimateTokens(meter.outputChars),
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: estimateTokens(meter.reasoningChars),
    estimated: true,
  };
}

/** A non-negative integer from an untrusted usage field (absent, null or garbage → 0). */
export function count(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
