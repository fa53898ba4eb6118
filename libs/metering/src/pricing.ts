/**
 * Pure pricing: the cost of a normalized usage under a price version, and the reservation
 * estimate taken before an attempt. Money is integer micro-USD; prices are micro-USD per
 * million tokens. Products are computed in BigInt and rounded up once per attempt, so a
 * cost is never under-stated and never off by more than 1 micro-USD.
 */

import type { TokenCounts } from "@byok/protocol";
import type { PriceRecord } from "@byok/store";

/** The fields of a price version that pricing reads. */
export type Price = Pick<PriceRecord, "version" | "inputPerMTok" | "outputPerMTok" | "cacheReadPerMTok" | "cacheWritePerMTok">;

/** Tokens that count toward token budgets and tokens-per-minute: input + output + cache read + cache write. */
export function usageTokens(u: TokenCounts): number {
  return u.inputTokens + u.outputTokens + u.cacheReadTokens + u.cacheWriteTokens;
}

/** Cost of `u` under `price`, in micro-USD, rounded up. */
export function costMicroUsd(u: TokenCounts, price: Price): number {
  return ceilDivMillion(
    mul(u.inputTokens, price.inputPerMTok) +
      mul(u.outputTokens, price.outputPerMTok) +
      mul(u.cacheReadTokens, price.cacheReadPerMTok) +
      mul(u.cacheWriteTokens, price.cacheWritePerMTok),
  );
}

export interface ReservationEstimate {
  costMicroUsd: number;
  tokens: number;
}

/**
 * What to reserve before an attempt: estimated input tokens × input price + max output
 * tokens × output price (no price: cost 0, tokens still counted).
 */
export function estimateReservation(e: { inputTokens: number; maxOutputTokens: number }, price: Price | undefined): ReservationEstimate {
  const cost = price === undefined ? 0 : ceilDivMillion(mul(e.inputTokens, price.inputPerMTok) + mul(e.maxOutputTokens, price.outputPerMTok));
  return { costMicroUsd: cost, tokens: e.inputTokens + e.maxOutputTokens };
}

/** "$12.345678" for reports and refusal messages. */
export function formatMicroUsd(micro: number): string {
  const sign = micro < 0 ? "-" : "";
  const abs = Math.abs(Math.trunc(micro));
  return `${sign}$${Math.floor(abs / 1e6)}.${String(abs % 1e6).padStart(6, "0").replace(/0{1,4}$/, "")}`;
}

function mul(tokens: number, perMTok: number): bigint {
  if (!Number.isSafeInteger(tokens) || tokens < 0) throw new RangeError("token counts must be non-negative integers");
  if (!Number.isSafeInteger(perMTok) || perMTok < 0) throw new RangeError("prices must be non-negative integer micro-USD per million tokens");
  return BigInt(tokens) * BigInt(perMTok);
}

function ceilDivMillion(n: bigint): number {
  return Number((n + 999_999n) / 1_000_000n);
}
