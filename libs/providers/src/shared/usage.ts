import type { ChatItem, ModelCallRequest, Usage } from "@byok/protocol";
import { estimateTokens } from "./tokens.js";

function itemText(item: ChatItem): string {
  switch (item.role) {
    case "user":
      return item.text;
    case "tool":
      return `${item.name}\n${item.output}`;
    case "assistant":
      return [item.text ?? "", ...(item.reasoning ?? []).map((r) => r.text), ...(item.toolCalls ?? []).map((c) => `${c.name}${c.argumentsJson}`)].join("\n");
  }
}

/** Everything a request sends as model input (instructions, history, tool schemas), as text to count. */
function requestText(req: ModelInput): string {
  return [
    req.instructions,
    ...req.items.map(itemText),
    ...req.tools.map((t) => `${t.name}\n${t.description}\n${JSON.stringify(t.parameters)}`),
  ]
    .filter((part) => part.length > 0)
    .join("\n");
}

/** What a model call sends as input. */
export type ModelInput = Pick<ModelCallRequest, "instructions" | "items" | "tools">;

/**
 * The one way model input is counted (pass estimates and compaction, budget reservations,
 * count_tokens, usage the provider never reported): its text through `estimateTokens`.
 */
export function estimateInputTokens(input: ModelInput, model: string): number {
  return estimateTokens(requestText(input), model);
}

/** Estimated input tokens of a request, counted once on first use (only needed when usage never arrives). */
export function inputEstimate(req: ModelCallRequest): () => number {
  let n: number | undefined;
  return () => (n ??= estimateInputTokens(req, req.target.model));
}

/** Collects the output a pass produced, for estimates when usage never arrives. */
export class OutputMeter {
  output = "";
  reasoning = "";
  add(text: string, reasoning = false): void {
    this.output += text;
    if (reasoning) this.reasoning += text;
  }
  get any(): boolean {
    return this.output.length > 0;
  }
}

/**
 * Usage estimated for a pass the provider never reported, marked `estimated: true` (normalized
 * like real usage: `output` is all output text, reasoning included; `reasoning` the reasoning alone).
 */
export function estimateUsage(inputTokens: number, meter: { readonly output: string; readonly reasoning: string }, model: string): Usage {
  return {
    inputTokens,
    outputTokens: estimateTokens(meter.output, model),
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: estimateTokens(meter.reasoning, model),
    estimated: true,
  };
}

/**
 * Usage from OpenAI-style counts, whose input total includes the cached and the cache-written
 * tokens (Chat Completions and Responses): those are taken out of input, each bounded by what
 * is left, so no count goes negative on a server's inconsistent report.
 */
export function usageFromInputTotal(c: { input: number; cached: number; written: number; output: number; reasoning: number }, raw: unknown): Usage {
  const cached = Math.min(c.input, c.cached);
  const written = Math.min(c.input - cached, c.written);
  return {
    inputTokens: c.input - cached - written,
    outputTokens: c.output,
    cacheReadTokens: cached,
    cacheWriteTokens: written,
    reasoningTokens: c.reasoning,
    estimated: false,
    raw,
  };
}

/** A non-negative integer from an untrusted usage field (absent, null or garbage → 0). */
export function count(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
