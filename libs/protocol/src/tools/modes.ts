import { AgentMode } from "@byok/wire";
import { TOOL, type BuiltinToolName } from "./names.js";

/**
 * Which built-in tools each mode offers (docs/protocol.md "Tools per mode"). Order is the order the
 * model sees. MCP tools and the web tools are further filtered by the catalogue (see
 * `catalogue.ts`): MCP tools only exist when the run declared MCP tools, and the web tools
 * only when policy enables them.
 */
export type ModeKind = "agent" | "ask" | "plan" | "debug";

const AGENT_SET: readonly BuiltinToolName[] = [
  TOOL.Read, TOOL.Write, TOOL.Edit, TOOL.Delete, TOOL.Grep, TOOL.Glob, TOOL.Ls, TOOL.ReadLints,
  TOOL.Shell, TOOL.AwaitShell, TOOL.WriteShellStdin, TOOL.ForceBackgroundShell,
  TOOL.Task, TOOL.TodoWrite, TOOL.AskQuestion, TOOL.SwitchMode, TOOL.WebSearch, TOOL.WebFetch,
  TOOL.CallMcpTool, TOOL.ListMcpResources, TOOL.FetchMcpResource,
];

/** Read-only: no Write, Edit, Delete, Shell; MCP reads only (a tool call may have side effects). */
const ASK_SET: readonly BuiltinToolName[] = [
  TOOL.Read, TOOL.Grep, TOOL.Glob, TOOL.Ls, TOOL.ReadLints, TOOL.AskQuestion, TOOL.WebSearch, TOOL.WebFetch,
  TOOL.ListMcpResources, TOOL.FetchMcpResource,
];

/** Read-only + Shell family, TodoWrite, CreatePlan, Task, MCP tools; no Write/Edit/Delete, no SwitchMode. */
const PLAN_SET: readonly BuiltinToolName[] = [
  TOOL.Read, TOOL.Grep, TOOL.Glob, TOOL.Ls, TOOL.ReadLints,
  TOOL.Shell, TOOL.AwaitShell, TOOL.WriteShellStdin, TOOL.ForceBackgroundShell,
  TOOL.Task, TOOL.TodoWrite, TOOL.AskQuestion, TOOL.CreatePlan, TOOL.WebSearch, TOOL.WebFetch,
  TOOL.CallMcpTool, TOOL.ListMcpResources, TOOL.FetchMcpResource,
];

const DEBUG_SET: readonly BuiltinToolName[] = AGENT_SET.filter((t) => t !== TOOL.SwitchMode);

/**
 * The tool set a wire mode uses. AGENT, MULTITASK and UNSPECIFIED use the agent set; so do
 * TRIAGE, PROJECT and CUSTOM, whose tool sets docs/protocol.md does not define (the client still
 * asks the user before it runs anything that needs approval).
 */
export function modeKind(mode: AgentMode): ModeKind {
  switch (mode) {
    case AgentMode.ASK:
      return "ask";
    case AgentMode.PLAN:
      return "plan";
    case AgentMode.DEBUG:
      return "debug";
    default:
      return "agent";
  }
}

/** Lower-case name of a mode for messages and SwitchMode (`"agent"`, `"ask"`, ...). */
export function modeName(mode: AgentMode): string {
  const name = AgentMode[mode];
  return typeof name === "string" ? name.toLowerCase() : `mode ${mode}`;
}

/** The built-in tools of a mode; a subagent run never gets AskQuestion (nobody can answer it). */
export function builtinToolsOf(mode: AgentMode, isSubagent: boolean): readonly BuiltinToolName[] {
  const kind = modeKind(mode);
  const set = kind === "ask" ? ASK_SET : kind === "plan" ? PLAN_SET : kind === "debug" ? DEBUG_SET : AGENT_SET;
  return isSubagent ? set.filter((t) => t !== TOOL.AskQuestion) : set;
}
