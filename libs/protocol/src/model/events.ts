/** What a provider pass yields: normalized output events ending in one `completed`, with exact usage. */
import type { ReasoningPart, ToolCallPart } from "./conversation.js";

/** Normalized token counts (see libs/providers/README.md "Usage normalization"): input excludes cache reads and writes; reasoning counted inside output. */
export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
}

/** Exact usage of one pass, as the provider reported it (or the gateway estimated it). */
export interface Usage extends TokenCounts {
  /** True when the provider did not report usage and these numbers are the gateway's estimate. */
  estimated: boolean;
  /** Provider's own usage object, for the ledger. Contains no secrets. */
  raw?: unknown;
}

export type OutputItem =
  | { kind: "text"; id: string; text: string }
  | { kind: "reasoning"; id: string; part: ReasoningPart }
  | { kind: "tool_call"; id: string; call: ToolCallPart };

export type ProviderEvent =
  | { type: "item_added"; itemId: string; kind: OutputItem["kind"]; toolName?: string }
  | { type: "text_delta"; itemId: string; text: string }
  | { type: "reasoning_delta"; itemId: string; text: string }
  | { type: "tool_call_delta"; itemId: string; argsDelta: string }
  | { type: "item_done"; item: OutputItem }
  | { type: "completed"; usage: Usage; endTurn: boolean; stopReason?: StopReason; responseModel?: string };

/**
 * Why the provider stopped (added; optional so existing consumers are unaffected):
 * `end_turn` the model finished, `tool_use` it wants tool results, `max_tokens` the output
 * cap cut it, `other` anything else the vendor reported (e.g. a stop sequence, pause_turn).
 */
export type StopReason = "end_turn" | "tool_use" | "max_tokens" | "other";
