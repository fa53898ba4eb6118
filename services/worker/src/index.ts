export { createRunWorker, type RunWorker, type RunWorkerConfig, type RunWorkerDeps } from "./worker.js";
export { startWorkerService, type WorkerService, type WorkerServiceOptions } from "./service.js";
