export { createRedisBus, type RedisBusConfig } from "./redis-bus.js";
export { requestKeys, escapeId, type RequestKeys, type GenerationKeys } from "./keys.js";
export { BusUnavailableError, isClusterTarget, type RedisConnectionOptions, type RedisClusterTarget, type RedisTarget } from "./connection.js";
