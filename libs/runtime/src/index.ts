// @byok/runtime: how a process that runs generations wires the engine (worker, embedded
// gateway): adapters and timers, per-tenant routes, the metering choice, the content policy.
export { createServiceEngine, providerAdapters } from "./engine.js";
export { createServiceCompat } from "./compat.js";
export { createStoreContentPolicy } from "./content-policy.js";
export { closeMetering, meteringFor, memoryMetering, redisMetering, type Metering } from "./metering.js";
export { applyFileRoutes, createTenantTargetResolver, prepareDefaultTenant, type RouteAsk, type TenantTargetResolverOptions } from "./routes.js";
export { tenancyEngineDeps } from "./tenancy.js";
