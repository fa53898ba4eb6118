export * from "./decode.js";
export * from "./classify.js";
export * from "./run-request.js";
export * from "./frames.js";
export * from "./usage.js";
export * from "./errors.js";
export { connectCode, connectErrorFor, endStreamFor, storedEndStream } from "./connect-error.js";
export * from "./translate.js";
export * from "./checkpoint.js";
export * from "./machine.js";
export {
  isAwaitingRun, isCallingModel, isEnded, isFinishing, isImporting, isInTurn, isRunningTools, isSummarizing, type Transition, type TransitionCause,
} from "./phase.js";
export * from "./tools/index.js";
export * from "./gate.js";
export * from "./blobs.js";
export * from "./snapshot.js";
export * from "./import.js";
export * from "./model/index.js";
export { historyDedupeKey } from "./history.js";
export { NOTICE } from "./notices.js";
export * from "./retry.js";
export { mayCompactAfterRefusal } from "./compaction.js";
