import type { Usage } from "@byok/protocol";
import { count, isRecord, usageFromInputTotal } from "../shared/usage.js";

/**
 * Normalizes a Chat Completions `usage` object (libs/providers/README.md "Usage normalization"):
 * input = prompt_tokens − cached (cached from `prompt_tokens_details.cached_tokens`, or
 * DeepSeek's `prompt_cache_hit_tokens`); output = completion_tokens (reasoning included, as
 * OpenAI reports it); reasoning = `completion_tokens_details.reasoning_tokens` or 0.
 * Cache writes (`prompt_tokens_details.cache_write_tokens`, where reported) are taken out of
 * input as well; otherwise 0.
 */
export function normalizeChatUsage(raw: unknown): Usage {
  const u = isRecord(raw) ? raw : {};
  const promptDetails = isRecord(u["prompt_tokens_details"]) ? u["prompt_tokens_details"] : {};
  const completionDetails = isRecord(u["completion_tokens_details"]) ? u["completion_tokens_details"] : {};
  return usageFromInputTotal(
    {
      input: count(u["prompt_tokens"]),
      cached: count(promptDetails["cached_tokens"]) || count(u["prompt_cache_hit_tokens"]),
      written: count(promptDetails["cache_write_tokens"]),
      output: count(u["completion_tokens"]),
      reasoning: count(completionDetails["reasoning_tokens"]),
    },
    raw,
  );
}
