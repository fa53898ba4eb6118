export { createRunWorker, type RunWorker, type RunWorkerConfig, type RunWorkerDeps } from "./worker.js";
export { startWorkerService, type WorkerService, type WorkerServiceOptions } from "./app.js";
export { redisTargetOf } from "./redis-target.js";
