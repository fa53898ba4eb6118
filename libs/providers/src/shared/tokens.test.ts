import { describe, expect, it } from "vitest";
import { countTokens as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { countTokens as cl100k } from "gpt-tokenizer/encoding/cl100k_base";
import { estimateTokens } from "./tokens.js";
import { estimateInputTokens, estimateUsage } from "./usage.js";

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

describe("estimateInputTokens", () => {
  const tool = { name: "read_file", description: "Reads a file.", parameters: { type: "object", properties: { path: { type: "string" } } } };

  it("counts the text a model reads (instructions, every kind of item, tool schemas), not the JSON around it", () => {
    const input = {
      instructions: "Be brief.",
      items: [
        { role: "user" as const, text: TEXT },
        { role: "assistant" as const, text: "Reading.", reasoning: [{ text: "look first" }], toolCalls: [{ id: "c1", name: "read_file", argumentsJson: '{"path":"a.ts"}' }] },
        { role: "tool" as const, toolCallId: "c1", name: "read_file", output: "export {};" },
      ],
      tools: [tool],
    };
    const text = ["Be brief.", TEXT, 'Reading.\nlook first\nread_file{"path":"a.ts"}', "read_file\nexport {};", `read_file\nReads a file.\n${JSON.stringify(tool.parameters)}`].join("\n");
    expect(estimateInputTokens(input, "gpt-5")).toBe(o200k(text));
    expect(estimateInputTokens(input, "claude-sonnet-4-5")).toBe(Math.ceil(text.length / 4));
    expect(estimateInputTokens({ instructions: "", items: [], tools: [] }, "gpt-5")).toBe(0);
  });

  it("estimates unreported usage with the same counter, reasoning counted inside output", () => {
    expect(estimateUsage(7, { output: `${TEXT}think`, reasoning: "think" }, "gpt-5")).toEqual({
      inputTokens: 7, outputTokens: o200k(`${TEXT}think`), cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: o200k("think"), estimated: true,
    });
  });
});
