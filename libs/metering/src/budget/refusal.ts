import { formatMicroUsd } from "../pricing.js";
import type { BudgetRefusal } from "./types.js";

/** Builds the refusal with a message that names the limit (no other tenant data in it). */
export function budgetRefusal(scope: "tenant" | "user", who: string, kind: "cost" | "tokens", limit: number, used: number): BudgetRefusal {
  const what = kind === "cost" ? `cost budget of ${formatMicroUsd(limit)}` : `token budget of ${limit.toLocaleString("en-US")} tokens`;
  const usedText = kind === "cost" ? formatMicroUsd(used) : `${used.toLocaleString("en-US")} tokens`;
  return {
    reason: "budget",
    scope,
    kind,
    limit,
    used,
    message: `The monthly ${what} of ${scope} ${who} is exhausted (${usedText} used or reserved this UTC month).`,
  };
}

/** The checks in order: tenant cost, tenant tokens, user cost, user tokens. */
export interface LimitCheck {
  scope: "tenant" | "user";
  kind: "cost" | "tokens";
  limit: number;
}
