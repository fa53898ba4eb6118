export * from "./simulator/index.js";
export * from "./client/index.js";
export * from "./workspace/executor.js";
export * from "./redis/private-server.js";
export * from "./redis/keys.js";
export * from "./process/output.js";
export * from "./fuzz.js";
export * from "./metrics/prometheus.js";
