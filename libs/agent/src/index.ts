export { createRunEngine, type RunEngine, type RunEngineDeps, type TargetResolution } from "./engine.js";
export { createInProcessDispatcher } from "./dispatcher.js";
export { chatItemsFromHistory } from "./history.js";
export {
  UNMETERED, estimateTokens, type RunMeter, type AttemptInfo, type AttemptResult, type AttemptOutcome, type Admission,
} from "./metering.js";
export { createHttpSearchBackend } from "./web-search.js";
export type { WebSearchBackend } from "./engine.js";
