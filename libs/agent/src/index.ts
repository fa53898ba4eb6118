export { createRunEngine } from "./engine.js";
export type { ContentPolicy, RunEngine, RunEngineDeps, TargetResolution, WebSearchBackend } from "./ports.js";
export { createInProcessDispatcher } from "./dispatcher.js";
export { endFailedGeneration, failedRunError, INTERNAL_RUN_ERROR } from "./failed-run.js";
export { chatItemsFromHistory } from "./history.js";
export {
  UNMETERED, type RunMeter, type AttemptInfo, type AttemptResult, type Admission,
} from "./metering.js";
export { createHttpSearchBackend } from "./web-search.js";
export { providerCallTelemetry, type ProviderCallTelemetry, type ModelCallTelemetry } from "./run/telemetry.js";
export { decodeSnapshot, encodeSnapshot, type RunSnapshot } from "./snapshot.js";
