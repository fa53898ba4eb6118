/**
 * The model-visible names of the gateway's built-in tools. The names are the gateway's
 * choice (docs/protocol.md "Tools per mode"): the model sees them, the Cursor client never does
 * (it sees exec branches, interaction queries and `ToolCall` variants).
 */
export const TOOL = {
  Read: "Read",
  Write: "Write",
  Edit: "Edit",
  Delete: "Delete",
  Grep: "Grep",
  Glob: "Glob",
  Ls: "Ls",
  ReadLints: "ReadLints",
  Shell: "Shell",
  AwaitShell: "AwaitShell",
  WriteShellStdin: "WriteShellStdin",
  ForceBackgroundShell: "ForceBackgroundShell",
  Task: "Task",
  TodoWrite: "TodoWrite",
  AskQuestion: "AskQuestion",
  CreatePlan: "CreatePlan",
  SwitchMode: "SwitchMode",
  WebSearch: "WebSearch",
  WebFetch: "WebFetch",
  CallMcpTool: "CallMcpTool",
  ListMcpResources: "ListMcpResources",
  FetchMcpResource: "FetchMcpResource",
} as const;

/** A built-in tool name. MCP tools exposed directly use names starting with {@link MCP_DIRECT_PREFIX}. */
export type BuiltinToolName = (typeof TOOL)[keyof typeof TOOL];

/** Prefix of MCP tools exposed to the model under their own name (see `mcp.ts`). */
export const MCP_DIRECT_PREFIX = "mcp__";

const BUILTIN = new Set<string>(Object.values(TOOL));

export function isBuiltinToolName(name: string): name is BuiltinToolName {
  return BUILTIN.has(name);
}
