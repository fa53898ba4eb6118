// @byok/runtime: how a process that runs generations wires the engine (worker, embedded
// gateway): adapters and timers, per-tenant routes, the metering choice, the content policy,
// and the worker's BullMQ run worker that feeds the engine its jobs; the compatible endpoints
// on the same routes and meter (embedded gateway and ingress replicas).
export { createServiceEngine, providerAdapters } from "./engine.js";
export { createServiceCompat } from "./compat.js";
export { createStoreContentPolicy } from "./content-policy.js";
export { closeMetering, meteringFor, memoryMetering, redisMetering, type Metering } from "./metering.js";
export { applyFileRoutes, createTenantTargetResolver, prepareDefaultTenant, type RouteAsk, type TenantTargetResolverOptions } from "./routes.js";
export { tenancyEngineDeps } from "./tenancy.js";
export { createRunWorker, type RunWorker, type RunWorkerConfig, type RunWorkerDeps } from "./run-worker.js";
