export { startWorkerService, type WorkerService, type WorkerServiceOptions } from "./service.js";
