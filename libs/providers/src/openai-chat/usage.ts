import type { Usage } from "@byok/protocol";
import { count, isRecord } from "../shared/usage.js";

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
  const prompt = count(u["prompt_tokens"]);
  const cached = Math.min(prompt, count(promptDetails["cached_tokens"]) || count(u["prompt_cache_hit_tokens"]));
  const written = Math.min(prompt - cached, count(promptDetails["cache_write_tokens"]));
  return {
    inputTokens: prompt - cached - written,
    outputTokens: count(u["completion_tokens"]),
    cacheReadTokens: cached,
    cacheWriteTokens: written,
    reasoningTokens: count(completionDetails["reasoning_tokens"]),
    estimated: false,
    raw,
  };
}
