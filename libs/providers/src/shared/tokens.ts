import { countTokens as countO200k } from "gpt-tokenizer/encoding/o200k_base";
import { countTokens as countCl100k } from "gpt-tokenizer/encoding/cl100k_base";

/**
 * The gateway's one token estimator (compaction decisions, budget reservations, usage of
 * attempts the provider never reported). For OpenAI model families it counts with the
 * family's own BPE encoding (`gpt-tokenizer`: `o200k_base` for GPT-4o, GPT-4.1, GPT-5 and the
 * o-series, `cl100k_base` for GPT-4 and GPT-3.5); for models without a maintained tokenizer
 * package (Anthropic's current models, most OpenAI-compatible endpoints) about four
 * characters per token.
 */
export function estimateTokens(text: string, model?: string): number {
  if (text.length === 0) return 0;
  const count = tokenizerFor(model);
  return count ? count(text) : Math.ceil(text.length / 4);
}

/** Which counter a model's family has, by its upstream name (an Azure deployment name may hide it). */
function tokenizerFor(model: string | undefined): ((text: string) => number) | undefined {
  const m = (model ?? "").toLowerCase().replace(/^(openai\/|azure\/)/, "");
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|o\d|codex|gpt-oss)/.test(m)) return (t) => countO200k(t);
  if (/^(gpt-4|gpt-3\.5)/.test(m)) return (t) => countCl100k(t);
  return undefined;
}
