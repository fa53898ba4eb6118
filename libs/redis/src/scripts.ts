import { readFileSync } from "node:fs";
import type { RedisClient } from "./connection.js";

/** A value ioredis sends as one bulk string; Buffers go out byte for byte. */
export type ScriptArg = string | number | Buffer;

/**
 * Typed spec of one Lua script: named KEYS and ARGV (in the order the script's header lists
 * them), an optional variadic ARGV tail, and a decoder that turns the raw reply into a typed
 * result. Nothing positional or `any` crosses the TypeScript/Lua boundary.
 */
export interface ScriptSpec<K extends string, A extends string, R, Rest extends boolean = false> {
  /** Command name registered with ioredis `defineCommand` (unique per connection). */
  readonly command: string;
  /** The script's source file, beside the spec (`new URL("./lua/x.lua", import.meta.url)`). */
  readonly lua: URL;
  readonly keys: readonly K[];
  readonly args: readonly A[];
  /** Whether extra ARGV values follow the named ones. */
  readonly rest: Rest;
  /** The reply's strings arrive as Buffers (a binary value in the reply); numbers stay numbers. */
  readonly binaryReply?: boolean;
  decode(reply: unknown): R;
}

export type ScriptCall<K extends string, A extends string, Rest extends boolean> = {
  keys: Record<K, string>;
  args: Record<A, ScriptArg>;
} & (Rest extends true ? { rest: readonly ScriptArg[] } : { rest?: undefined });

type RawScript = (...argv: ScriptArg[]) => Promise<unknown>;

/** Registers the scripts on a connection (EVALSHA with an automatic EVAL fallback). */
export function defineScripts(redis: RedisClient, specs: readonly ScriptSpec<string, string, unknown, boolean>[]): void {
  for (const spec of specs) redis.defineCommand(spec.command, { numberOfKeys: spec.keys.length, lua: readFileSync(spec.lua, "utf8") });
}

/** Runs a script defined with defineScripts: named keys and args become KEYS/ARGV in spec order. */
export async function runScript<K extends string, A extends string, R, Rest extends boolean>(
  redis: RedisClient,
  spec: ScriptSpec<K, A, R, Rest>,
  call: ScriptCall<K, A, Rest>,
): Promise<R> {
  // defineCommand adds the method at run time; this lookup is the one untyped step, and the
  // spec is what makes its arguments and reply typed.
  // defineCommand also adds `<command>Buffer`, the same script with Buffer replies.
  const fn = (redis as unknown as Record<string, RawScript | undefined>)[spec.binaryReply ? `${spec.command}Buffer` : spec.command];
  if (typeof fn !== "function") throw new Error(`script ${spec.command} is not defined on this connection`);
  const argv: ScriptArg[] = [
    ...spec.keys.map((k) => call.keys[k]),
    ...spec.args.map((a) => call.args[a]),
    ...(call.rest ?? []),
  ];
  return spec.decode(await fn.apply(redis, argv));
}
