import { describe, expect, it } from "vitest";
import { costMicroUsd, estimateReservation, formatMicroUsd, usageTokens } from "../src/index.js";

const price = { version: 2, inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheReadPerMTok: 300_000, cacheWritePerMTok: 3_750_000 };
const usage = { inputTokens: 1_000, outputTokens: 500, cacheReadTokens: 10_000, cacheWriteTokens: 2_000, reasoningTokens: 200 };

describe("pricing", () => {
  it("prices every token class per million, in micro-USD, rounding up once", () => {
    // 1000×3 + 500×15 + 10000×0.3 + 2000×3.75 = 3000 + 7500 + 3000 + 7500
    expect(costMicroUsd(usage, price)).toBe(21_000);
    expect(costMicroUsd({ ...usage, inputTokens: 1, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 }, { ...price, inputPerMTok: 1 })).toBe(1);
    expect(costMicroUsd({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 99 }, price)).toBe(0);
  });

  it("stays exact for large counts", () => {
    expect(costMicroUsd({ ...usage, inputTokens: 2_000_000_000, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 }, { ...price, inputPerMTok: 75_000_000 })).toBe(150_000_000_000);
  });

  it("refuses negative or fractional inputs", () => {
    expect(() => costMicroUsd({ ...usage, inputTokens: -1 }, price)).toThrow(RangeError);
    expect(() => costMicroUsd(usage, { ...price, outputPerMTok: 1.5 })).toThrow(RangeError);
  });

  it("estimates a reservation from input tokens and max output tokens", () => {
    expect(estimateReservation({ inputTokens: 10_000, maxOutputTokens: 4_000 }, price)).toEqual({ costMicroUsd: 90_000, tokens: 14_000 });
    expect(estimateReservation({ inputTokens: 10, maxOutputTokens: 5 }, undefined)).toEqual({ costMicroUsd: 0, tokens: 15 });
  });

  it("counts tokens without double-counting reasoning, and formats dollars", () => {
    expect(usageTokens(usage)).toBe(13_500);
    expect(formatMicroUsd(12_345_678)).toBe("$12.345678");
    expect(formatMicroUsd(10_000_000)).toBe("$10.00");
    expect(formatMicroUsd(250)).toBe("$0.00025");
  });
});
