// Typed specs of the scripts in ./lua (each script's header is the authoritative description).
import { replyArray, replyInt, replyString, type ScriptSpec } from "@byok/redis";
import type { LeaseState } from "../budget/types.js";

const lua = (file: string): URL => new URL(`./lua/${file}`, import.meta.url);

/** The counter and lease sets of the tenant, then of the user (see budget-reserve.lua). */
export type LeaseKeys = "tenant" | "tenantLeases" | "tenantExpired" | "user" | "userLeases" | "userExpired";
const LEASE_KEYS: readonly LeaseKeys[] = ["tenant", "tenantLeases", "tenantExpired", "user", "userLeases", "userExpired"];

export type BudgetReserveReply =
  | { status: "ok"; expiresAtMs: number }
  | { status: "missing"; scope: "tenant" | "user" }
  | { status: "refused"; scope: "tenant" | "user"; kind: "cost" | "tokens"; limit: number; used: number };

const scopeOf = (v: string, script: string): "tenant" | "user" => {
  if (v === "tenant" || v === "user") return v;
  throw new Error(`${script}: unknown scope ${v}`);
};

export const budgetReserve: ScriptSpec<
  LeaseKeys,
  | "hasUser" | "chargeCost" | "cost" | "tokens" | "tenantCostLimit" | "tenantTokenLimit" | "userCostLimit" | "userTokenLimit"
  | "lease" | "leaseTtlMs" | "expireAtMs" | "keepExpiredMs",
  BudgetReserveReply
> = {
  command: "byokBudgetReserve",
  lua: lua("budget-reserve.lua"),
  rest: false,
  keys: LEASE_KEYS,
  args: [
    "hasUser", "chargeCost", "cost", "tokens", "tenantCostLimit", "tenantTokenLimit", "userCostLimit", "userTokenLimit",
    "lease", "leaseTtlMs", "expireAtMs", "keepExpiredMs",
  ],
  decode(reply) {
    const r = replyArray(reply, this.command);
    const status = replyString(r[0], this.command);
    if (status === "ok") return { status, expiresAtMs: replyInt(r[1], this.command) };
    const scope = scopeOf(replyString(r[1], this.command), this.command);
    if (status === "missing") return { status, scope };
    if (status !== "refused") throw new Error(`${this.command}: unknown status ${status}`);
    const kind = replyString(r[2], this.command);
    if (kind !== "cost" && kind !== "tokens") throw new Error(`${this.command}: unknown kind ${kind}`);
    return { status, scope, kind, limit: replyInt(r[3], this.command), used: replyInt(r[4], this.command) };
  },
};

export const budgetSeed: ScriptSpec<"counter" | "leases", "cost" | "tokens" | "expireAtMs", boolean> = {
  command: "byokBudgetSeed",
  lua: lua("budget-seed.lua"),
  rest: false,
  keys: ["counter", "leases"],
  args: ["cost", "tokens", "expireAtMs"],
  decode(reply) {
    return replyInt(reply, this.command) === 1;
  },
};

export const budgetSettle: ScriptSpec<LeaseKeys, "hasUser" | "lease" | "cost" | "tokens", LeaseState> = {
  command: "byokBudgetSettle",
  lua: lua("budget-settle.lua"),
  rest: false,
  keys: LEASE_KEYS,
  args: ["hasUser", "lease", "cost", "tokens"],
  decode(reply) {
    const state = replyString(reply, this.command);
    if (state === "live" || state === "expired" || state === "settled") return state;
    throw new Error(`${this.command}: unknown state ${state}`);
  },
};

export const budgetRenew: ScriptSpec<"tenantLeases" | "userLeases", "hasUser" | "lease" | "leaseTtlMs", number | undefined> = {
  command: "byokBudgetRenew",
  lua: lua("budget-renew.lua"),
  rest: false,
  keys: ["tenantLeases", "userLeases"],
  args: ["hasUser", "lease", "leaseTtlMs"],
  decode(reply) {
    const n = replyInt(reply, this.command);
    return n < 0 ? undefined : n;
  },
};

export type RateStartReply = { status: "ok" } | { status: "refused"; scope: "tenant" | "key"; kind: "run_starts" | "tokens"; limit: number };

export const rateStart: ScriptSpec<
  "tenant" | "key",
  "hasKey" | "tenantStarts" | "tenantTokens" | "keyStarts" | "keyTokens" | "ttlMs",
  RateStartReply
> = {
  command: "byokRateStart",
  lua: lua("rate-start.lua"),
  rest: false,
  keys: ["tenant", "key"],
  args: ["hasKey", "tenantStarts", "tenantTokens", "keyStarts", "keyTokens", "ttlMs"],
  decode(reply) {
    const r = replyArray(reply, this.command);
    const status = replyString(r[0], this.command);
    if (status === "ok") return { status };
    const scope = replyString(r[1], this.command);
    const kind = replyString(r[2], this.command);
    if ((scope !== "tenant" && scope !== "key") || (kind !== "run_starts" && kind !== "tokens")) {
      throw new Error(`${this.command}: unknown refusal ${scope}/${kind}`);
    }
    return { status: "refused", scope, kind, limit: replyInt(r[3], this.command) };
  },
};

export const rateTokens: ScriptSpec<"tenant" | "key", "hasKey" | "tokens" | "ttlMs", number> = {
  command: "byokRateTokens",
  lua: lua("rate-tokens.lua"),
  rest: false,
  keys: ["tenant", "key"],
  args: ["hasKey", "tokens", "ttlMs"],
  decode(reply) {
    return replyInt(reply, this.command);
  },
};

export const ALL_SCRIPTS = [budgetReserve, budgetSeed, budgetSettle, budgetRenew, rateStart, rateTokens] as const;
