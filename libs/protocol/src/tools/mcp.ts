import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import type { McpToolDefinition } from "@byok/wire";
import type { ToolSpec } from "../model/index.js";
import { MCP_DIRECT_PREFIX } from "./names.js";

/**
 * MCP tools of the run (`AgentRunRequest.mcp_tools`), seen by the model two ways:
 * - always through the generic `CallMcpTool{server, tool_name, arguments}`;
 * - the first {@link MCP_DIRECT_TOOL_LIMIT} also directly, as `mcp__<server>__<tool>` with the
 *   server's own input schema, which models use far more reliably than a generic call.
 * Both map to the same `mcp_args`. The server id is the definition's `provider_identifier`.
 */

/** How many MCP tools are exposed under their own name (providers cap the tool count, ~128). */
export const MCP_DIRECT_TOOL_LIMIT = 40;
/** Provider tool names are at most 64 characters of `[A-Za-z0-9_-]`. */
export const TOOL_NAME_MAX = 64;
/** How many MCP tools CallMcpTool's description lists. */
const LISTED_IN_CALL_DESCRIPTION = 100;

export function mcpServerOf(def: McpToolDefinition): string {
  return def.providerIdentifier || serverFromName(def) || "mcp";
}

export function mcpToolNameOf(def: McpToolDefinition): string {
  return def.toolName || def.name;
}

function serverFromName(def: McpToolDefinition): string {
  // Fallback for clients that only fill `name` as "<server>-<tool>".
  const tool = def.toolName;
  if (tool && def.name.endsWith(`-${tool}`)) return def.name.slice(0, -tool.length - 1);
  return "";
}

function sanitize(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]/g, "_");
}

/** The direct name of an MCP tool, or undefined when it cannot be made unique within 64 characters. */
export function directMcpName(def: McpToolDefinition): string {
  const name = `${MCP_DIRECT_PREFIX}${sanitize(mcpServerOf(def))}__${sanitize(mcpToolNameOf(def))}`;
  return name.length <= TOOL_NAME_MAX ? name : name.slice(0, TOOL_NAME_MAX);
}

/** Direct-name → definition for the tools exposed directly (duplicates after sanitizing are dropped). */
export function directMcpTools(defs: readonly McpToolDefinition[]): Map<string, McpToolDefinition> {
  const out = new Map<string, McpToolDefinition>();
  for (const def of defs) {
    if (out.size >= MCP_DIRECT_TOOL_LIMIT) break;
    const name = directMcpName(def);
    if (!out.has(name)) out.set(name, def);
  }
  return out;
}

/** Finds a tool by server and tool name (exact first, then case-insensitive). */
export function findMcpTool(defs: readonly McpToolDefinition[], server: string, tool: string): McpToolDefinition | undefined {
  const exact = defs.find((d) => mcpServerOf(d) === server && mcpToolNameOf(d) === tool);
  if (exact) return exact;
  const s = server.toLowerCase();
  const t = tool.toLowerCase();
  return defs.find((d) => mcpServerOf(d).toLowerCase() === s && mcpToolNameOf(d).toLowerCase() === t)
    ?? defs.find((d) => d.name === tool && (mcpServerOf(d) === server || server === ""));
}

/** "server/tool" lines for messages, capped. */
export function listMcpTools(defs: readonly McpToolDefinition[], max = LISTED_IN_CALL_DESCRIPTION): string {
  const lines = defs.slice(0, max).map((d) => {
    const desc = firstLine(d.description);
    return `- ${mcpServerOf(d)} / ${mcpToolNameOf(d)}${desc ? `: ${desc}` : ""}`;
  });
  if (defs.length > max) lines.push(`- ... and ${defs.length - max} more`);
  return lines.join("\n");
}

function firstLine(s: string): string {
  const line = s.split("\n", 1)[0]?.trim() ?? "";
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}

/** The input schema of an MCP tool as a JSON object; a permissive object schema when absent or unreadable. */
export function mcpInputSchema(def: McpToolDefinition): Record<string, unknown> {
  let schema: unknown;
  if (def.inputSchemaJson) {
    try {
      schema = JSON.parse(def.inputSchemaJson);
    } catch {
      schema = undefined;
    }
  }
  if (schema === undefined && def.inputSchema) schema = toJson(ValueSchema, def.inputSchema);
  if (typeof schema === "object" && schema !== null && !Array.isArray(schema)) {
    const obj = schema as Record<string, unknown>;
    return obj["type"] === undefined ? { type: "object", ...obj } : obj;
  }
  return { type: "object", properties: {} };
}

/** The ToolSpec of a directly exposed MCP tool. */
export function directMcpSpec(name: string, def: McpToolDefinition): ToolSpec {
  const desc = def.description.trim() || `Tool ${mcpToolNameOf(def)}.`;
  return {
    name,
    description: `${desc}\n\n(MCP tool "${mcpToolNameOf(def)}" of server "${mcpServerOf(def)}".)`,
    parameters: mcpInputSchema(def),
  };
}

/** Converts a JSON arguments object to `McpArgs.args` (`map<string, google.protobuf.Value>`). */
export function toMcpArgs(args: Record<string, unknown>): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const [k, v] of Object.entries(args)) {
    if (v === undefined) continue;
    out[k] = fromJson(ValueSchema, v as JsonValue);
  }
  return out;
}

/** Converts `McpArgs.args` back to plain JSON (for messages and tests). */
export function fromMcpArgs(args: Record<string, Value>): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(args)) out[k] = toJson(ValueSchema, v);
  return out;
}
