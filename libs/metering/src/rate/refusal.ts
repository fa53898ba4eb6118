import { msToNextMinute } from "../period.js";
import type { RateRefusal } from "./types.js";

export function rateRefusal(scope: "tenant" | "key", who: string, kind: "run_starts" | "tokens", limit: number, now: Date): RateRefusal {
  const retryAfterMs = msToNextMinute(now);
  const what = kind === "run_starts" ? `${limit} run starts per minute` : `${limit.toLocaleString("en-US")} tokens per minute`;
  const owner = scope === "tenant" ? `tenant ${who}` : `API key ${who}`;
  return {
    reason: "rate",
    scope,
    kind,
    limit,
    retryAfterMs,
    message: `Rate limit of ${owner} reached: ${what}. Retry in ${Math.ceil(retryAfterMs / 1000)} s.`,
  };
}
