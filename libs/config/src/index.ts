export * from "./schema.js";
export * from "./load.js";
export * from "./redis.js";
export * from "./control-plane.js";
export * from "./telemetry.js";
export * from "./admin.js";
