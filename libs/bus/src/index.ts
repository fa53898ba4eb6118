export * from "./types.js";
export { GenerationGoneError } from "./errors.js";
export { createMemoryBus } from "./memory/memory-bus.js";
export { createRedisBus, requestKeys, startsChannel, BusUnavailableError, type RedisBusConfig, type RedisConnectionOptions, type RequestKeys } from "./redis/index.js";
export { isClusterTarget, type RedisClusterTarget, type RedisTarget } from "./redis/index.js";
export * from "./bullmq/index.js";
export { ANONYMOUS_PRINCIPAL, type EntryMeta, type RunPrincipal } from "./entry-meta.js";
