import { create } from "@bufbuild/protobuf";
import {
  AgentMode, AskQuestionArgsSchema, AskQuestionToolCallSchema, CreatePlanArgsSchema, CreatePlanToolCallSchema,
  ListMcpResourcesExecArgsSchema, ListMcpResourcesToolCallSchema, McpArgsSchema, McpToolCallSchema,
  ReadMcpResourceExecArgsSchema, ReadMcpResourceToolCallSchema, SubagentArgsSchema, SubagentTypeSchema,
  SwitchModeArgsSchema, SwitchModeToolCallSchema, TaskArgsSchema, TaskMode, TaskToolCallSchema, TodoItemSchema,
  TodoStatus, WebFetchArgsSchema, WebFetchToolCallSchema, WebSearchArgsSchema, WebSearchToolCallSchema,
  type McpToolDefinition, type SubagentType,
} from "@byok/wire";
import { mcpServerOf, mcpToolNameOf, toMcpArgs } from "./mcp.js";
import { modeKind } from "./modes.js";
import { toolCall } from "./outcome.js";
import type {
  AskQuestionToolInput, CreatePlanToolInput, FetchMcpResourceToolInput, ListMcpResourcesToolInput,
  SwitchModeToolInput, TaskToolInput, WebFetchToolInput, WebSearchToolInput,
} from "./specs.js";
import type { ExecPlan, InteractionPlan, ToolContext } from "./types.js";

/** Plans of Task, the MCP tools and the interaction tools. */

function subagentType(name: string | undefined): SubagentType {
  const n = (name ?? "").trim();
  const lower = n.toLowerCase();
  const type: SubagentType["type"] =
    lower === "" || lower === "generalpurpose" || lower === "general" ? { case: "unspecified", value: { $typeName: "agent.v1.SubagentTypeUnspecified" } }
    : lower === "explore" ? { case: "explore", value: { $typeName: "agent.v1.SubagentTypeExplore" } }
    : lower === "debug" ? { case: "debug", value: { $typeName: "agent.v1.SubagentTypeDebug" } }
    : lower === "shell" ? { case: "shell", value: { $typeName: "agent.v1.SubagentTypeShell" } }
    : lower === "bash" ? { case: "bash", value: { $typeName: "agent.v1.SubagentTypeBash" } }
    : { case: "custom", value: { $typeName: "agent.v1.SubagentTypeCustom", name: n } };
  return create(SubagentTypeSchema, { type });
}

/**
 * Task → `subagent_args`. In ask and plan modes the subagent is forced read-only (those modes
 * never change files). The client runs the subagent as its own request (docs/protocol.md).
 */
export function planTask(callId: string, toolName: string, a: TaskToolInput, ctx: ToolContext): ExecPlan {
  const kind = modeKind(ctx.mode);
  const readonly = (a.readonly ?? false) || kind === "ask" || kind === "plan";
  const subagentTypeName = (a.subagent_type ?? "").trim() || "generalPurpose";
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: {
      case: "subagentArgs",
      value: create(SubagentArgsSchema, {
        toolCallId: callId,
        subagentType: subagentTypeName,
        modelId: a.model ?? "",
        prompt: a.prompt,
        readonly,
        runInBackground: a.run_in_background,
        resumeAgentId: a.resume_agent_id,
        mode: TaskMode.AGENT,
      }),
    },
    started: toolCall(callId, {
      case: "taskToolCall",
      value: create(TaskToolCallSchema, {
        args: create(TaskArgsSchema, {
          description: a.description,
          prompt: a.prompt,
          subagentType: subagentType(a.subagent_type),
          model: a.model,
          resume: a.resume_agent_id,
          mode: TaskMode.AGENT,
        }),
      }),
    }),
  };
}

/** CallMcpTool / a direct MCP tool → `mcp_args` for a known definition. */
export function planMcpCall(callId: string, toolName: string, def: McpToolDefinition, args: Record<string, unknown>): ExecPlan {
  const server = mcpServerOf(def);
  const mcpArgs = create(McpArgsSchema, {
    name: def.name || mcpToolNameOf(def),
    args: toMcpArgs(args),
    toolCallId: callId,
    providerIdentifier: server,
    toolName: mcpToolNameOf(def),
    serverIdentifier: server,
  });
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: { case: "mcpArgs", value: mcpArgs },
    started: toolCall(callId, { case: "mcpToolCall", value: create(McpToolCallSchema, { args: mcpArgs }) }),
  };
}

export function planListMcpResources(callId: string, toolName: string, a: ListMcpResourcesToolInput): ExecPlan {
  const args = create(ListMcpResourcesExecArgsSchema, { server: a.server });
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: { case: "listMcpResourcesExecArgs", value: args },
    started: toolCall(callId, { case: "listMcpResourcesToolCall", value: create(ListMcpResourcesToolCallSchema, { args }) }),
  };
}

export function planFetchMcpResource(callId: string, toolName: string, a: FetchMcpResourceToolInput): ExecPlan {
  const args = create(ReadMcpResourceExecArgsSchema, { server: a.server, uri: a.uri, downloadPath: a.download_path, toolCallId: callId });
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: { case: "readMcpResourceExecArgs", value: args },
    started: toolCall(callId, { case: "readMcpResourceToolCall", value: create(ReadMcpResourceToolCallSchema, { args }) }),
  };
}

export function planAskQuestion(callId: string, toolName: string, a: AskQuestionToolInput): InteractionPlan {
  const args = create(AskQuestionArgsSchema, {
    title: a.title ?? "",
    questions: a.questions.map((q) => ({
      id: q.id, prompt: q.prompt, allowMultiple: q.allow_multiple ?? false,
      options: q.options.map((o) => ({ id: o.id, label: o.label })),
    })),
  });
  return {
    kind: "interaction", callId, toolName,
    query: { case: "askQuestionInteractionQuery", value: { $typeName: "agent.v1.AskQuestionInteractionQuery", args, toolCallId: callId } },
    started: toolCall(callId, { case: "askQuestionToolCall", value: create(AskQuestionToolCallSchema, { args }) }),
  };
}

export function planCreatePlan(callId: string, toolName: string, a: CreatePlanToolInput): InteractionPlan {
  const args = create(CreatePlanArgsSchema, {
    name: a.name,
    overview: a.overview,
    plan: a.plan,
    todos: (a.todos ?? []).map((t) => create(TodoItemSchema, { id: t.id, content: t.content, status: TodoStatus.PENDING })),
  });
  return {
    kind: "interaction", callId, toolName,
    query: { case: "createPlanRequestQuery", value: { $typeName: "agent.v1.CreatePlanRequestQuery", args, toolCallId: callId } },
    started: toolCall(callId, { case: "createPlanToolCall", value: create(CreatePlanToolCallSchema, { args }) }),
  };
}

/** The wire mode a SwitchMode target id names. */
export const SWITCH_MODE_TARGETS: Readonly<Record<SwitchModeToolInput["target_mode_id"], AgentMode>> = {
  agent: AgentMode.AGENT, ask: AgentMode.ASK, plan: AgentMode.PLAN, debug: AgentMode.DEBUG,
};

export function planSwitchMode(callId: string, toolName: string, a: SwitchModeToolInput, fromMode: string): InteractionPlan {
  const args = create(SwitchModeArgsSchema, { targetModeId: a.target_mode_id, explanation: a.explanation, toolCallId: callId });
  return {
    kind: "interaction", callId, toolName,
    fromMode,
    query: { case: "switchModeRequestQuery", value: { $typeName: "agent.v1.SwitchModeRequestQuery", args } },
    started: toolCall(callId, { case: "switchModeToolCall", value: create(SwitchModeToolCallSchema, { args }) }),
  };
}

export function planWebSearch(callId: string, toolName: string, a: WebSearchToolInput): InteractionPlan {
  const args = create(WebSearchArgsSchema, { searchTerm: a.search_term, toolCallId: callId });
  return {
    kind: "interaction", callId, toolName,
    query: { case: "webSearchRequestQuery", value: { $typeName: "agent.v1.WebSearchRequestQuery", args } },
    started: toolCall(callId, { case: "webSearchToolCall", value: create(WebSearchToolCallSchema, { args }) }),
  };
}

/** WebFetch asks for approval first (`web_fetch_request_query`); `completeInteraction` then yields the `fetch_args` exec. */
export function planWebFetch(callId: string, toolName: string, a: WebFetchToolInput): InteractionPlan {
  const args = create(WebFetchArgsSchema, { url: a.url, toolCallId: callId });
  return {
    kind: "interaction", callId, toolName,
    query: {
      case: "webFetchRequestQuery",
      value: { $typeName: "agent.v1.WebFetchRequestQuery", args, skipApproval: false },
    },
    started: toolCall(callId, { case: "webFetchToolCall", value: create(WebFetchToolCallSchema, { args }) }),
  };
}

/** Only absolute http(s) URLs can be fetched. */
export function isFetchableUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}
