export { startSimulator, type Simulator, type SimulatorOptions, type SimScriptSource } from "./server.js";
export type { SimScript, SimToolCall, SimUsage, SimHttpError, SimStreamError } from "./script.js";
export type { SimRequest, SimOutcome, SecretHit } from "./recording.js";
export type { SimApi, ApiRenderer, Frame, RenderContext } from "./renderer.js";
export { DEFAULT_SIM_CONTEXT_WINDOW, simTokens, vendorRejection } from "./validate.js";
