import { create } from "@bufbuild/protobuf";
import { AgentMode, McpToolDefinitionSchema, type McpToolDefinition } from "@byok/wire";
import type { ToolCallPart } from "../src/index.js";
import type { ExecPlan, InteractionPlan, ToolContext, ToolPlan } from "../src/index.js";

/** Shared fixtures of the tool-layer tests. */
export const mcpDefs: McpToolDefinition[] = [
  create(McpToolDefinitionSchema, {
    name: "github-create_issue",
    providerIdentifier: "github",
    toolName: "create_issue",
    description: "Create a GitHub issue.\nMore text.",
    inputSchemaJson: JSON.stringify({
      type: "object",
      properties: { title: { type: "string" }, body: { type: "string" } },
      required: ["title"],
    }),
  }),
  create(McpToolDefinitionSchema, {
    name: "docs-search",
    providerIdentifier: "docs",
    toolName: "search",
    description: "Search the docs.",
  }),
];

export function ctx(over: Partial<ToolContext> = {}): ToolContext {
  return {
    mode: AgentMode.AGENT,
    mcpTools: mcpDefs,
    isSubagent: false,
    webSearchEnabled: true,
    webFetchEnabled: true,
    ...over,
  };
}

export function call(name: string, args: unknown, id = "call-1"): ToolCallPart {
  return { id, name, argumentsJson: typeof args === "string" ? args : JSON.stringify(args) };
}

export function asExec(p: ToolPlan): ExecPlan {
  if (p.kind !== "exec") throw new Error(`expected exec plan, got ${p.kind}: ${"outcome" in p ? p.outcome.modelText : ""}`);
  return p;
}

export function asInteraction(p: ToolPlan): InteractionPlan {
  if (p.kind !== "interaction") throw new Error(`expected interaction plan, got ${p.kind}: ${"outcome" in p ? p.outcome.modelText : ""}`);
  return p;
}
