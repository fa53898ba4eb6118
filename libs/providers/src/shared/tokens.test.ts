import { describe, expect, it } from "vitest";
import { countTokens as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { countTokens as cl100k } from "gpt-tokenizer/encoding/cl100k_base";
import { estimateTokens } from "./tokens.js";

// Text whose token count differs between the two OpenAI encodings and from chars/4.
const TEXT = "Die Übersetzung von 日本語のテキスト and some code: const x = await fetch(url, { method: 'POST' });";

describe("estimateTokens", () => {
  it("counts OpenAI families with their own encoding", () => {
    expect(o200k(TEXT)).not.toBe(cl100k(TEXT));
    for (const m of ["gpt-4o", "gpt-4.1-mini", "gpt-5", "o3-mini", "codex-mini-latest"]) expect(estimateTokens(TEXT, m)).toBe(o200k(TEXT));
    for (const m of ["gpt-4-turbo", "gpt-3.5-turbo"]) expect(estimateTokens(TEXT, m)).toBe(cl100k(TEXT));
  });

  it("falls back to about four characters per token where no maintained tokenizer exists", () => {
    for (const m of ["claude-sonnet-4-5", "us.anthropic.claude-sonnet-4-5-v1:0", "deepseek-reasoner", undefined]) {
      expect(estimateTokens(TEXT, m)).toBe(Math.ceil(TEXT.length / 4));
    }
    expect(estimateTokens("", "gpt-5")).toBe(0);
  });
});
