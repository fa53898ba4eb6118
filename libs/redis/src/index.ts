/**
 * @byok/redis: the one Redis kit of the gateway (bus and metering): connections (one node or a
 * Redis Cluster), typed Lua script specs with reply decoders, and the hash-tag escaper that
 * keeps every key of one script in one cluster slot.
 */
export {
  closeConnection, createClient, defaultTuning, isClusterTarget, isDisconnected, openConnection,
  type ConnectionTuning, type RedisClient, type RedisClusterTarget, type RedisConnectionOptions, type RedisTarget,
} from "./connection.js";
export { defineScripts, runScript, type ScriptArg, type ScriptCall, type ScriptSpec } from "./scripts.js";
export { replyArray, replyBytes, replyInt, replyString } from "./replies.js";
export { assertKeyPrefix, escapeId, hashTag } from "./hash-tag.js";
