// The Redis kit on a real Redis: typed script calls (named keys and args, rest values, decoded
// replies) and the hash-tag escaper. Connection behaviour under outages: the bus's outage suite.
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { afterAll, describe, expect, it } from "vitest";
import {
  assertKeyPrefix, closeConnection, defaultTuning, defineScripts, escapeId, hashTag, openConnection, replyArray, replyInt, replyString, runScript,
  type ScriptSpec,
} from "../src/index.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const calculateSlot = createRequire(import.meta.url)("cluster-key-slot") as (key: string) => number;

const echoSum: ScriptSpec<"counter", "amount" | "label", { total: number; label: string }, true> = {
  command: "byokTestEchoSum",
  lua: new URL("./lua/echo-sum.lua", import.meta.url),
  keys: ["counter"],
  args: ["amount", "label"],
  rest: true,
  decode(reply) {
    const r = replyArray(reply, this.command);
    return { total: replyInt(r[0], this.command), label: replyString(r[1], this.command) };
  },
};

describe("@byok/redis", () => {
  const redis = openConnection(REDIS_URL, defaultTuning("byok-redis-kit-test"));
  defineScripts(redis, [echoSum]);
  const key = `redis-kit-test:${randomUUID()}`;
  afterAll(async () => {
    await redis.del(key);
    await closeConnection(redis);
  });

  it("runs a typed script: named keys and args in spec order, rest values after them, decoded reply", async () => {
    expect(await runScript(redis, echoSum, { keys: { counter: key }, args: { amount: 2, label: "first" }, rest: [3, "4"] })).toEqual({ total: 9, label: "first" });
    expect(await runScript(redis, echoSum, { keys: { counter: key }, args: { amount: 1, label: "x" }, rest: [] })).toEqual({ total: 10, label: "x" });
  });

  it("refuses a script not defined on the connection, and a reply that does not decode", async () => {
    const other = openConnection(REDIS_URL, defaultTuning("byok-redis-kit-test-2"));
    try {
      await expect(runScript(other, echoSum, { keys: { counter: key }, args: { amount: 1, label: "x" }, rest: [] })).rejects.toThrow(/not defined/);
    } finally {
      await closeConnection(other);
    }
    expect(() => replyInt("1.5", "s")).toThrow(/s: expected an integer/);
    expect(() => replyArray("OK", "s")).toThrow(/s: unexpected reply/);
  });

  it("escapes ids in hash tags: braces and colons neither end the tag nor let two id lists collide", () => {
    expect(hashTag("t}", "{r")).toBe("{t%7D:%7Br}");
    expect(hashTag("a:b", "c")).not.toBe(hashTag("a", "b:c"));
    expect(escapeId("50%")).toBe("50%25");
    // Every key carrying the tag maps to the slot of the tag's content.
    const tag = hashTag("ten{ant}", "x");
    expect(calculateSlot(`p:${tag}:a`)).toBe(calculateSlot(`q:${tag}:b:c`));
    expect(calculateSlot(`p:${tag}:a`)).toBe(calculateSlot(tag.slice(1, -1)));
    expect(() => assertKeyPrefix("bad{prefix")).toThrow(/braces/);
    expect(() => assertKeyPrefix("")).toThrow(/non-empty/);
  });
});
