/**
 * Public surface of the pure tool layer: the model-visible catalogue per mode, planning of a
 * model tool call into an exec / interaction / edit / local / await / refused plan, completion
 * of exec and interaction results into model text + `ToolCall`, shell stream aggregation and
 * the server-composed string-replace edit. No I/O, no clock, no randomness.
 */
export * from "./types.js";
export { TOOL, MCP_DIRECT_PREFIX, isBuiltinToolName, type BuiltinToolName } from "./names.js";
export { toolsFor, isToolOffered, availability } from "./catalogue.js";
export { builtinToolsOf, modeKind, modeName, type ModeKind } from "./modes.js";
export { BUILTIN_TOOLS, SHELL_MAX_TIMEOUT_MS, AWAIT_MAX_BLOCK_MS, type BuiltinToolDef } from "./specs.js";
export type * from "./specs.js";
export { validateArgs, type JsonSchema, type ObjectSchema, type Validated } from "./json-schema.js";
export { MCP_DIRECT_TOOL_LIMIT, directMcpName, directMcpTools, findMcpTool, mcpServerOf, mcpToolNameOf, toMcpArgs, fromMcpArgs } from "./mcp.js";
export { planToolCall, refuse } from "./plan.js";
export { GLOB_MATCH_ALL_PATTERN } from "./plan-files.js";
export { DEFAULT_SHELL_TIMEOUT_MS, DEFAULT_AWAIT_BLOCK_MS } from "./plan-shell.js";
export { SWITCH_MODE_TARGETS } from "./plan-agentic.js";
export { startEdit, continueEdit, type EditStep } from "./edit.js";
export { mergeTodos } from "./todos.js";
export * from "./limits.js";
export { completeExec, toolErrorOutcome, expectedResultCases, resultMatches } from "./complete.js";
export { completeInteraction, completeWebSearch, expectedResponseCase, type WebSearchHit } from "./interaction.js";
export { completeAwaitShell, type AwaitShellStatus } from "./await.js";
export { startShell, applyShellEvent, failShell, type ShellAgg, type ShellStep, type InteractionUpdateMessage } from "./shell.js";
export { withErrorResult } from "./error-result.js";
export { MAX_READ_MODEL_CHARS } from "./render-files.js";
export { interruptedOutcome } from "./interrupted.js";
