/**
 * Redis RateLimiter: one hash {starts, tokens} per scope and minute window, under the
 * tenant's hash tag (tenant and key windows share a slot), checked and counted by one Lua
 * script, so limits hold across replicas. Windows expire two minutes after they start.
 * A lost window restarts at zero (at most one minute of slack; budgets, not rate windows,
 * are what the ledger rebuilds).
 */
import { minuteWindow } from "../period.js";
import { openRedis, type RedisSource } from "../redis/connection.js";
import { escapeId, hashTag, runScript } from "@byok/redis";
import { rateStart, rateTokens } from "../redis/specs.js";
import { rateRefusal } from "./refusal.js";
import type { RateLimiter } from "./types.js";

const WINDOW_TTL_MS = 120_000;

export interface RedisRateOptions {
  redis: RedisSource;
  /** Key prefix (tests use a unique one); default "byok". */
  prefix?: string;
}

export function createRedisRateLimiter(opts: RedisRateOptions): RateLimiter & { keyPrefix: string } {
  const { redis, close } = openRedis(opts.redis);
  const prefix = opts.prefix ?? "byok";
  const keys = (tenantId: string, keyId: string | undefined, now: Date) => {
    const base = `${prefix}:rate:${hashTag(tenantId)}:${minuteWindow(now)}`;
    return { tenant: `${base}:tenant`, key: keyId === undefined ? `${base}:tenant` : `${base}:key:${escapeId(keyId)}` };
  };
  const lim = (n: number | undefined) => (n === undefined ? -1 : n);

  return {
    keyPrefix: prefix,

    async tryStartRun(s) {
      const now = s.now ?? new Date();
      const reply = await runScript(redis, rateStart, { keys: keys(s.tenantId, s.keyId, now), args: {
        hasKey: s.keyId === undefined ? 0 : 1,
        tenantStarts: lim(s.limits.tenant?.runStartsPerMinute),
        tenantTokens: lim(s.limits.tenant?.tokensPerMinute),
        keyStarts: lim(s.limits.key?.runStartsPerMinute),
        keyTokens: lim(s.limits.key?.tokensPerMinute),
        ttlMs: WINDOW_TTL_MS,
      } });
      if (reply.status === "ok") return { ok: true };
      const who = reply.scope === "tenant" ? s.tenantId : (s.keyId ?? "");
      return { ok: false, refused: rateRefusal(reply.scope, who, reply.kind, reply.limit, now) };
    },

    async recordTokens(s, tokens) {
      await runScript(redis, rateTokens, { keys: keys(s.tenantId, s.keyId, s.now ?? new Date()), args: {
        hasKey: s.keyId === undefined ? 0 : 1,
        tokens,
        ttlMs: WINDOW_TTL_MS,
      } });
    },

    close,
  };
}
