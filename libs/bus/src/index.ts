export * from "./types.js";
export { createMemoryBus } from "./memory/memory-bus.js";
