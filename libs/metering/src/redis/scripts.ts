/**
 * Typed Lua scripts: named KEYS and ARGV in the order each script's header lists them, and
 * a decoder for the reply, so nothing positional or untyped crosses the boundary.
 */
import { readFileSync } from "node:fs";
import type { Redis } from "ioredis";

export type ScriptArg = string | number;

export interface ScriptSpec<K extends string, A extends string, R> {
  readonly command: string;
  readonly file: string;
  readonly keys: readonly K[];
  readonly args: readonly A[];
  decode(reply: unknown): R;
}

type RawScript = (...argv: ScriptArg[]) => Promise<unknown>;

export function defineScripts(redis: Redis, specs: readonly ScriptSpec<string, string, unknown>[]): void {
  for (const s of specs) {
    redis.defineCommand(s.command, { numberOfKeys: s.keys.length, lua: readFileSync(new URL(`./lua/${s.file}`, import.meta.url), "utf8") });
  }
}

export async function runScript<K extends string, A extends string, R>(
  redis: Redis,
  spec: ScriptSpec<K, A, R>,
  keys: Record<K, string>,
  args: Record<A, ScriptArg>,
): Promise<R> {
  // defineCommand adds the method at run time: the one untyped lookup, typed by the spec.
  const fn = (redis as unknown as Record<string, RawScript | undefined>)[spec.command];
  if (typeof fn !== "function") throw new Error(`script ${spec.command} is not defined on this connection`);
  return spec.decode(await fn.apply(redis, [...spec.keys.map((k) => keys[k]), ...spec.args.map((a) => args[a])]));
}

export function replyArray(reply: unknown, script: string): unknown[] {
  if (!Array.isArray(reply)) throw new Error(`${script}: expected an array reply`);
  return reply;
}

export function replyString(v: unknown, script: string): string {
  if (typeof v === "string") return v;
  if (Buffer.isBuffer(v)) return v.toString("utf8");
  throw new Error(`${script}: expected a string in the reply`);
}

export function replyInt(v: unknown, script: string): number {
  const n = typeof v === "number" ? v : Number(replyString(v, script));
  if (!Number.isSafeInteger(n)) throw new Error(`${script}: expected an integer in the reply`);
  return n;
}

/** `{tenant}` hash tag: every key of one tenant lands in one cluster slot, so scripts may span them. */
export function tenantTag(tenantId: string): string {
  return `{${encodeURIComponent(tenantId)}}`;
}
