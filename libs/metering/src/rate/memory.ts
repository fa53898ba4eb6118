/** In-memory RateLimiter (embedded mode). Check-and-add is synchronous, hence atomic. */
import { minuteWindow } from "../period.js";
import { rateRefusal } from "./refusal.js";
import type { RateLimits } from "@byok/store";
import type { RateLimiter } from "./types.js";

interface Window {
  starts: number;
  tokens: number;
}

export function createMemoryRateLimiter(): RateLimiter {
  let current = -1;
  let windows = new Map<string, Window>();

  const windowsAt = (now: Date) => {
    const w = minuteWindow(now);
    if (w !== current) {
      // Only the current minute matters: drop the rest, bounding memory to one window.
      current = w;
      windows = new Map();
    }
    return windows;
  };
  const get = (m: Map<string, Window>, k: string) => {
    let w = m.get(k);
    if (w === undefined) m.set(k, (w = { starts: 0, tokens: 0 }));
    return w;
  };
  const scopeKeys = (tenantId: string, keyId: string | undefined) =>
    [JSON.stringify(["t", tenantId]), ...(keyId === undefined ? [] : [JSON.stringify(["k", tenantId, keyId])])];

  return {
    async tryStartRun(s) {
      const now = s.now ?? new Date();
      const m = windowsAt(now);
      const [tKey, kKey] = scopeKeys(s.tenantId, s.keyId);
      const scopes: ["tenant" | "key", string, Window, RateLimits | undefined][] = [["tenant", s.tenantId, get(m, tKey ?? ""), s.limits.tenant]];
      if (kKey !== undefined && s.keyId !== undefined) scopes.push(["key", s.keyId, get(m, kKey), s.limits.key]);
      for (const [scope, who, w, l] of scopes) {
        if (l?.runStartsPerMinute !== undefined && w.starts >= l.runStartsPerMinute) return { ok: false, refused: rateRefusal(scope, who, "run_starts", l.runStartsPerMinute, now) };
        if (l?.tokensPerMinute !== undefined && w.tokens >= l.tokensPerMinute) return { ok: false, refused: rateRefusal(scope, who, "tokens", l.tokensPerMinute, now) };
      }
      for (const [, , w] of scopes) w.starts++;
      return { ok: true };
    },

    async recordTokens(s, tokens) {
      const m = windowsAt(s.now ?? new Date());
      for (const k of scopeKeys(s.tenantId, s.keyId)) get(m, k).tokens += tokens;
    },

    async close() {
      windows.clear();
    },
  };
}
