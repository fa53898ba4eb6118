import { create } from "@bufbuild/protobuf";
import { WebFetchToolCallSchema, WebSearchToolCallSchema, type McpToolDefinition } from "@byok/wire";
import type { ToolCallPart } from "../model/index.js";
import { availability } from "./catalogue.js";
import { startEdit } from "./edit.js";
import { validateArgs } from "./json-schema.js";
import { directMcpTools, findMcpTool, listMcpTools } from "./mcp.js";
import { builtinToolsOf, modeKind, modeName } from "./modes.js";
import { TOOL, isBuiltinToolName, type BuiltinToolName } from "./names.js";
import { outcome, toolCall } from "./outcome.js";
import {
  isFetchableUrl, planAskQuestion, planCreatePlan, planFetchMcpResource, planListMcpResources, planMcpCall,
  planSwitchMode, planTask, planWebFetch, planWebSearch,
} from "./plan-agentic.js";
import { planDelete, planGlob, planGrep, planLs, planRead, planReadLints, planWrite } from "./plan-files.js";
import { planAwaitShell, planForceBackgroundShell, planShell, planWriteShellStdin } from "./plan-shell.js";
import { BUILTIN_TOOLS } from "./specs.js";
import type * as In from "./specs.js";
import { planTodoWrite } from "./todos.js";
import type { LocalPlan, RefusedPlan, ToolContext, ToolPlan } from "./types.js";

/**
 * Plans one model tool call. Total: every input yields a plan, never a throw.
 *
 * Order of checks: arguments are JSON → the tool exists → it is offered in this mode →
 * it is available (policy, MCP servers) → arguments match the schema → tool-specific checks.
 * Every refusal is a `refused` plan whose outcome tells the model what to do instead.
 * Disabled web tools give a `local` plan with a rejected `web_search_tool_call` /
 * `web_fetch_tool_call`, so the user sees why.
 */
export function planToolCall(call: ToolCallPart, ctx: ToolContext): ToolPlan {
  const parsed = parseJsonObject(call.argumentsJson);
  if (!parsed.ok) return refuse(call, `The arguments of ${call.name} are not a valid JSON object (${parsed.error}). Call the tool again with a JSON object matching its schema.`);
  const args = parsed.value;

  if (!isBuiltinToolName(call.name)) {
    const direct = directMcpTools(ctx.mcpTools).get(call.name);
    if (direct && builtinToolsOf(ctx.mode, ctx.isSubagent).includes(TOOL.CallMcpTool)) return planMcpCall(call.id, call.name, direct, args);
    return refuse(call, `Unknown tool "${call.name}". Available tools: ${offeredNames(ctx).join(", ")}.`);
  }
  const name = call.name;
  if (!builtinToolsOf(ctx.mode, ctx.isSubagent).includes(name)) {
    const why = ctx.isSubagent && name === TOOL.AskQuestion
      ? "A subagent cannot ask the user questions; decide yourself or report the open question in your final answer."
      : `${name} is not available in ${modeName(ctx.mode)} mode.`;
    return refuse(call, `${why} Available tools: ${offeredNames(ctx).join(", ")}.`);
  }
  const unavailable = availability(name, ctx);
  if (unavailable !== undefined && name !== TOOL.WebSearch && name !== TOOL.WebFetch) return refuse(call, unavailable);

  const v = validateArgs<unknown>(BUILTIN_TOOLS[name].schema, args);
  if (!v.ok) return refuse(call, `Invalid arguments for ${name}: ${v.error}. Fix the arguments and call ${name} again.`);
  if (unavailable !== undefined) return disabledWebTool(call, name, v.value, unavailable);
  return planBuiltin(call, name, v.value, ctx);
}

/** Dispatch of validated arguments; `value` was validated against `BUILTIN_TOOLS[name].schema`. */
function planBuiltin(call: ToolCallPart, name: BuiltinToolName, value: unknown, ctx: ToolContext): ToolPlan {
  const id = call.id;
  switch (name) {
    case TOOL.Read: return planRead(id, name, value as In.ReadToolInput);
    case TOOL.Write: return planWrite(id, name, value as In.WriteToolInput);
    case TOOL.Edit: return startEdit(id, name, value as In.EditToolInput);
    case TOOL.Delete: return planDelete(id, name, value as In.DeleteToolInput);
    case TOOL.Grep: return planGrep(id, name, value as In.GrepToolInput);
    case TOOL.Glob: return planGlob(id, name, value as In.GlobToolInput);
    case TOOL.Ls: return planLs(id, name, value as In.LsToolInput);
    case TOOL.ReadLints: return planReadLints(id, name, value as In.ReadLintsToolInput);
    case TOOL.Shell: return planShell(id, name, value as In.ShellToolInput);
    case TOOL.AwaitShell: return planAwaitShell(id, name, value as In.AwaitShellToolInput);
    case TOOL.WriteShellStdin: return planWriteShellStdin(id, name, value as In.WriteShellStdinToolInput);
    case TOOL.ForceBackgroundShell: return planForceBackgroundShell(id, name, value as In.ForceBackgroundShellToolInput);
    case TOOL.Task: return planTask(id, name, value as In.TaskToolInput, ctx);
    case TOOL.TodoWrite: return planTodoWrite(id, name, value as In.TodoWriteToolInput, ctx);
    case TOOL.AskQuestion: return planAskQuestionChecked(call, value as In.AskQuestionToolInput);
    case TOOL.CreatePlan: return planCreatePlan(id, name, value as In.CreatePlanToolInput);
    case TOOL.SwitchMode: {
      const a = value as In.SwitchModeToolInput;
      if (modeKind(ctx.mode) === a.target_mode_id) return refuse(call, `The conversation is already in ${a.target_mode_id} mode.`);
      return planSwitchMode(id, name, a, modeName(ctx.mode));
    }
    case TOOL.WebSearch: return planWebSearch(id, name, value as In.WebSearchToolInput);
    case TOOL.WebFetch: {
      const a = value as In.WebFetchToolInput;
      if (!isFetchableUrl(a.url)) return refuse(call, `WebFetch needs an absolute http:// or https:// URL; got ${JSON.stringify(a.url)}.`);
      return planWebFetch(id, name, a);
    }
    case TOOL.CallMcpTool: return planCallMcpTool(call, value as In.CallMcpToolInput, ctx.mcpTools);
    case TOOL.ListMcpResources: return planListMcpResources(id, name, value as In.ListMcpResourcesToolInput);
    case TOOL.FetchMcpResource: return planFetchMcpResource(id, name, value as In.FetchMcpResourceToolInput);
  }
}

function planCallMcpTool(call: ToolCallPart, a: In.CallMcpToolInput, defs: readonly McpToolDefinition[]): ToolPlan {
  const def = findMcpTool(defs, a.server, a.tool_name);
  if (!def) {
    return refuse(call, `MCP tool "${a.tool_name}" of server "${a.server}" does not exist. Available MCP tools (server / tool):\n${listMcpTools(defs)}`);
  }
  return planMcpCall(call.id, call.name, def, a.arguments ?? {});
}

function planAskQuestionChecked(call: ToolCallPart, a: In.AskQuestionToolInput): ToolPlan {
  const ids = new Set<string>();
  for (const q of a.questions) {
    if (ids.has(q.id)) return refuse(call, `Duplicate question id ${JSON.stringify(q.id)}: every question needs a unique id.`);
    ids.add(q.id);
    const optionIds = new Set(q.options.map((o) => o.id));
    if (optionIds.size !== q.options.length) return refuse(call, `Question ${JSON.stringify(q.id)} has duplicate option ids.`);
  }
  return planAskQuestion(call.id, call.name, a);
}

function disabledWebTool(call: ToolCallPart, name: BuiltinToolName, value: unknown, reason: string): LocalPlan {
  const text = `${reason} Answer from your own knowledge and the workspace instead, and tell the user the web could not be used.`;
  if (name === TOOL.WebSearch) {
    const a = value as In.WebSearchToolInput;
    const args = { searchTerm: a.search_term, toolCallId: call.id };
    return {
      kind: "local", callId: call.id, toolName: name,
      started: toolCall(call.id, { case: "webSearchToolCall", value: create(WebSearchToolCallSchema, { args }) }),
      outcome: outcome(text, true, toolCall(call.id, {
        case: "webSearchToolCall",
        value: create(WebSearchToolCallSchema, { args, result: { result: { case: "rejected", value: { reason } } } }),
      })),
    };
  }
  const a = value as In.WebFetchToolInput;
  const args = { url: a.url, toolCallId: call.id };
  return {
    kind: "local", callId: call.id, toolName: name,
    started: toolCall(call.id, { case: "webFetchToolCall", value: create(WebFetchToolCallSchema, { args }) }),
    outcome: outcome(text, true, toolCall(call.id, {
      case: "webFetchToolCall",
      value: create(WebFetchToolCallSchema, { args, result: { result: { case: "rejected", value: { reason } } } }),
    })),
  };
}

function offeredNames(ctx: ToolContext): string[] {
  const names: string[] = builtinToolsOf(ctx.mode, ctx.isSubagent).filter((n) => availability(n, ctx) === undefined);
  if (names.includes(TOOL.CallMcpTool)) names.push(...directMcpTools(ctx.mcpTools).keys());
  return names;
}

/** A refused plan: the model reads `message`; the `ToolCall` has the call id and no variant. */
export function refuse(call: Pick<ToolCallPart, "id" | "name">, message: string): RefusedPlan {
  return { kind: "refused", callId: call.id, toolName: call.name, outcome: outcome(message, true, toolCall(call.id)) };
}

type Parsed = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/** Empty or whitespace-only arguments mean `{}` (some providers send "" for no-argument calls). */
function parseJsonObject(text: string): Parsed {
  if (text.trim() === "") return { ok: true, value: {} };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : "parse error" };
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return { ok: false, error: "not an object" };
  return { ok: true, value: v as Record<string, unknown> };
}
