import type { Usage } from "@byok/protocol";
import { count, isRecord } from "../shared/usage.js";

/**
 * Accumulates Anthropic usage across `message_start` and `message_delta` (whose counts are
 * cumulative, so later values replace earlier ones field by field).
 */
export class AnthropicUsageAccumulator {
  private raw: Record<string, unknown> = {};
  seen = false;

  add(usage: unknown): void {
    if (!isRecord(usage)) return;
    this.seen = true;
    for (const [k, v] of Object.entries(usage)) if (v !== null && v !== undefined) this.raw[k] = v;
  }

  /**
   * Normalized usage (libs/providers/README.md "Usage normalization"): Anthropic's `input_tokens` already excludes cache reads
   * (`cache_read_input_tokens`) and writes (`cache_creation_input_tokens`); output includes
   * thinking; Anthropic does not report thinking tokens separately, so reasoningTokens is 0.
   */
  normalized(): Usage {
    return {
      inputTokens: count(this.raw["input_tokens"]),
      outputTokens: count(this.raw["output_tokens"]),
      cacheReadTokens: count(this.raw["cache_read_input_tokens"]),
      cacheWriteTokens: count(this.raw["cache_creation_input_tokens"]),
      reasoningTokens: 0,
      estimated: false,
      raw: { ...this.raw },
    };
  }
}
