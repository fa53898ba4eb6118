import type { Usage } from "@byok/protocol";

/** Normalized usage (input excludes cache reads and writes) in Chat Completions terms. */
export function chatUsage(u: Usage) {
  const prompt = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  return {
    prompt_tokens: prompt,
    completion_tokens: u.outputTokens,
    total_tokens: prompt + u.outputTokens,
    prompt_tokens_details: { cached_tokens: u.cacheReadTokens },
    completion_tokens_details: { reasoning_tokens: u.reasoningTokens },
  };
}

/** Normalized usage in Responses terms. */
export function responsesUsage(u: Usage) {
  const input = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u.cacheReadTokens },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens },
    total_tokens: input + u.outputTokens,
  };
}
