export { startSimulator, type Simulator, type SimulatorOptions, type SimScriptSource } from "./server.js";
export type { SimScript, SimToolCall, SimUsage, SimHttpError, SimStreamError } from "./script.js";
export type { SimApi, SimRequest, SimOutcome, SecretHit } from "./recording.js";
export type { ApiRenderer, Frame, RenderContext } from "./renderer.js";
export { DEFAULT_SIM_CONTEXT_WINDOW, simTokens, vendorRejection } from "./validate.js";
