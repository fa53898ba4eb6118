export { createRedisBus, type RedisBusConfig } from "./redis-bus.js";
export { requestKeys, startsChannel, type RequestKeys, type GenerationKeys } from "./keys.js";
export { BusUnavailableError } from "./unavailable.js";
export { isClusterTarget, type RedisConnectionOptions, type RedisClusterTarget, type RedisTarget } from "@byok/redis";
