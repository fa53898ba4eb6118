export { createRunWorker, type RunWorker, type RunWorkerConfig, type RunWorkerDeps } from "./worker.js";
export { startWorkerService, type WorkerService, type WorkerServiceOptions } from "./app.js";
export { applyFileRoutes, createStoreContentPolicy, createTenantTargetResolver, kekFor, memoryMetering, openGatewayStore, prepareDefaultTenant, redisMetering, tenancyEngineDeps, type ContentMode, type ContentPolicy, type RouteAsk, type TenantTargetResolverOptions } from "./tenancy.js";
export { createServiceEngine, providerAdapters } from "./engine.js";
