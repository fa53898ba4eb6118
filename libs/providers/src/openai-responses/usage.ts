import type { Usage } from "@byok/protocol";
import { count, isRecord, usageFromInputTotal } from "../shared/usage.js";

/**
 * Normalizes a Responses `usage` object (libs/providers/README.md "Usage normalization"): `input_tokens` counts every input
 * token, so input = input_tokens − cached_tokens − cache_write_tokens; output = output_tokens
 * (reasoning included, as OpenAI reports it); reasoning = output_tokens_details.reasoning_tokens.
 */
export function normalizeResponsesUsage(raw: unknown): Usage {
  const u = isRecord(raw) ? raw : {};
  const inDetails = isRecord(u["input_tokens_details"]) ? u["input_tokens_details"] : {};
  const outDetails = isRecord(u["output_tokens_details"]) ? u["output_tokens_details"] : {};
  return usageFromInputTotal(
    {
      input: count(u["input_tokens"]),
      cached: count(inDetails["cached_tokens"]),
      written: count(inDetails["cache_write_tokens"]),
      output: count(u["output_tokens"]),
      reasoning: count(outDetails["reasoning_tokens"]),
    },
    raw,
  );
}
