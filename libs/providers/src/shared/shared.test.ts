import { describe, expect, it } from "vitest";
import { attemptNamespace, outputItemId } from "./ids.js";
import { redact } from "./redact.js";
import { parseRetryAfter } from "./retry-after.js";
import { ThinkTagSplitter } from "./think-tags.js";
import { classifyFailure } from "./classify.js";
import { usageFromInputTotal } from "./usage.js";

describe("ids", () => {
  it("namespaces by model call and attempt within 64 safe characters", () => {
    expect(outputItemId("mc-1", 2, "tc", 3)).toBe("mc-1_2_tc3");
    const long = outputItemId("conv/".repeat(30), 12, "tc", 7);
    expect(long.length).toBeLessThanOrEqual(64);
    expect(long).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(attemptNamespace("a.b", 1)).toBe("a_b_1");
    expect(outputItemId("x".repeat(100), 1, "tc", 0)).not.toBe(outputItemId("x".repeat(101), 1, "tc", 0));
  });
});

describe("parseRetryAfter", () => {
  const now = () => Date.parse("2026-01-01T00:00:00Z");
  it("reads retry-after-ms first, then seconds, then HTTP dates", () => {
    expect(parseRetryAfter({ "retry-after-ms": "1500.2", "retry-after": "9" })).toBe(1501);
    expect(parseRetryAfter({ "retry-after": "2" })).toBe(2000);
    expect(parseRetryAfter({ "retry-after": "Thu, 01 Jan 2026 00:00:30 GMT" }, now)).toBe(30_000);
    expect(parseRetryAfter({ "retry-after": "Wed, 31 Dec 2025 23:00:00 GMT" }, now)).toBe(0);
    expect(parseRetryAfter(new Headers({ "retry-after": "1" }))).toBe(1000);
  });
  it("ignores garbage and caps absurd values", () => {
    expect(parseRetryAfter({ "retry-after": "soon" })).toBeUndefined();
    expect(parseRetryAfter({})).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter({ "retry-after": "86400" })).toBe(600_000);
  });
});

describe("redact", () => {
  it("removes known secrets and credential-shaped strings", () => {
    const out = redact("key sk-abcdefgh123456 and AKIAABCDEFGHIJKLMNOP and Bearer abc.def.ghijk and api_key=hunter22 and mine-secret", ["mine-secret"]);
    expect(out).not.toMatch(/sk-abcdefgh|AKIAABCD|abc\.def|hunter22|mine-secret/);
    expect(out).toContain("api_key=[redacted]");
  });
});

describe("ThinkTagSplitter", () => {
  it("splits across arbitrary chunk boundaries and releases non-tags", () => {
    const s = new ThinkTagSplitter();
    const segs = ["a<", "thi", "nk>b</", "think>c <t", "x"].flatMap((c) => s.push(c)).concat(s.flush());
    const text = segs.filter((x) => !x.reasoning).map((x) => x.text).join("");
    const reasoning = segs.filter((x) => x.reasoning).map((x) => x.text).join("");
    expect(text).toBe("ac <tx");
    expect(reasoning).toBe("b");
  });
});

describe("classifyFailure", () => {
  it("prefers precise body codes over statuses", () => {
    expect(classifyFailure({ status: 429, code: "insufficient_quota" })).toBe("quota");
    expect(classifyFailure({ status: 400, message: "prompt is too long: 210000 tokens > 200000 maximum" })).toBe("context_overflow");
    expect(classifyFailure({ status: 413 })).toBe("context_overflow");
    expect(classifyFailure({ status: 529 })).toBe("overloaded");
    expect(classifyFailure({ status: undefined, type: "overloaded_error" })).toBe("overloaded");
    expect(classifyFailure({ status: 502 })).toBe("server");
    expect(classifyFailure({ status: 408 })).toBe("timeout");
    expect(classifyFailure({ status: 418 })).toBe("invalid_request");
  });
});

describe("usageFromInputTotal", () => {
  it("takes cached and cache-written tokens out of an input total that includes them", () => {
    expect(usageFromInputTotal({ input: 100, cached: 50, written: 5, output: 40, reasoning: 20 }, "raw")).toEqual({
      inputTokens: 45, outputTokens: 40, cacheReadTokens: 50, cacheWriteTokens: 5, reasoningTokens: 20, estimated: false, raw: "raw",
    });
  });

  it("bounds each by what is left, so an inconsistent report never counts negative input", () => {
    expect(usageFromInputTotal({ input: 10, cached: 8, written: 7, output: 1, reasoning: 0 }, undefined)).toMatchObject({ inputTokens: 0, cacheReadTokens: 8, cacheWriteTokens: 2 });
    expect(usageFromInputTotal({ input: 3, cached: 9, written: 1, output: 0, reasoning: 0 }, undefined)).toMatchObject({ inputTokens: 0, cacheReadTokens: 3, cacheWriteTokens: 0 });
  });
});
