export { createBullmqDispatcher, type BullmqDispatcher, type BullmqDispatcherConfig } from "./dispatcher.js";
export { openQueueConnection } from "./connection.js";
export { runJobId, escapeJobIdPart } from "./job-id.js";
export { RUN_JOB_NAME, assertQueueName, assertQueuePrefix, type RunJobData, type RunQueueSettings } from "./types.js";
export { startWorkerPresence, type WorkerPresence, type WorkerPresenceConfig } from "./worker-presence.js";
