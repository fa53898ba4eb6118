import type { ToolSpec } from "../model/index.js";
import { directMcpSpec, directMcpTools, listMcpTools } from "./mcp.js";
import { builtinToolsOf } from "./modes.js";
import { TOOL, type BuiltinToolName } from "./names.js";
import { BUILTIN_TOOLS } from "./specs.js";
import type { ToolContext } from "./types.js";

/**
 * Whether a built-in tool is offered in this context: it belongs to the mode's set
 * (docs/protocol.md "Tools per mode"), the web tools are enabled by policy, and MCP tools exist
 * only when the run declared MCP tools.
 */
export function isToolOffered(name: BuiltinToolName, ctx: ToolContext): boolean {
  if (!builtinToolsOf(ctx.mode, ctx.isSubagent).includes(name)) return false;
  return availability(name, ctx) === undefined;
}

/**
 * Why a tool of the mode's set is not available in this context (undefined when it is).
 * Used for the model-facing message when it calls it anyway.
 */
export function availability(name: BuiltinToolName, ctx: ToolContext): string | undefined {
  if (name === TOOL.WebSearch && !ctx.webSearchEnabled) return "Web search is disabled by policy on this gateway.";
  if (name === TOOL.WebFetch && !ctx.webFetchEnabled) return "Web fetch is disabled by policy on this gateway.";
  if ((name === TOOL.CallMcpTool || name === TOOL.ListMcpResources || name === TOOL.FetchMcpResource) && ctx.mcpTools.length === 0) {
    return "No MCP servers are configured for this conversation.";
  }
  return undefined;
}

function builtinSpec(name: BuiltinToolName, ctx: ToolContext): ToolSpec {
  const def = BUILTIN_TOOLS[name];
  let description = def.description;
  if (name === TOOL.CallMcpTool) description += `\n\nAvailable MCP tools (server / tool):\n${listMcpTools(ctx.mcpTools)}`;
  return { name: def.name, description, parameters: { ...def.schema } };
}

/**
 * The tools the model is offered for one provider pass. Deterministic for a given context
 * (same order every pass, which keeps provider prompt caches warm): the mode's built-in tools
 * in a fixed order, then the directly exposed MCP tools (only in modes that allow CallMcpTool).
 */
export function toolsFor(ctx: ToolContext): ToolSpec[] {
  const names = builtinToolsOf(ctx.mode, ctx.isSubagent).filter((n) => availability(n, ctx) === undefined);
  const specs = names.map((n) => builtinSpec(n, ctx));
  if (names.includes(TOOL.CallMcpTool)) {
    for (const [name, def] of directMcpTools(ctx.mcpTools)) specs.push(directMcpSpec(name, def));
  }
  return specs;
}
