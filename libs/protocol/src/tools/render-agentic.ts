import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  ForceBackgroundShellStatus, ListMcpResourcesToolCallSchema, McpToolCallSchema, ReadMcpResourceToolCallSchema,
  ShellToolCallSchema, SubagentBackgroundReason, TaskToolCallSchema, WebFetchToolCallSchema, WriteShellStdinToolCallSchema,
  type FetchResult, type ForceBackgroundShellResult, type ListMcpResourcesExecResult, type McpResult,
  type McpToolResultContentItem, type ReadMcpResourceExecResult, type SubagentResult, type WriteShellStdinResult,
} from "@byok/wire";
import { MAX_LIST_ENTRIES, capUi } from "./limits.js";
import { outcome, toolCall } from "./outcome.js";
import { renderShellResult } from "./shell-render.js";
import type { ExecPlan, ToolOutcome } from "./types.js";

/** Completion of MCP calls and resources, Task (subagent), WebFetch (fetch), WriteShellStdin and ForceBackgroundShell. */

function mcpContentText(items: readonly McpToolResultContentItem[]): string {
  return items.map((i) => {
    switch (i.content.case) {
      case "text": return i.content.value.text;
      case "image": return `[image ${i.content.value.mimeType}, ${i.content.value.data.length} bytes]`;
      default: return "";
    }
  }).filter((s) => s !== "").join("\n");
}

type McpToolResultInit = MessageInitShape<typeof McpToolCallSchema>["result"];

export function completeMcp(plan: ExecPlan, r: McpResult): ToolOutcome {
  const args = plan.exec.case === "mcpArgs" ? plan.exec.value : undefined;
  const label = `${args?.providerIdentifier ?? ""}/${args?.toolName ?? ""}`;
  const done = (text: string, isError: boolean, result: McpToolResultInit) =>
    outcome(text, isError, toolCall(plan.callId, { case: "mcpToolCall", value: create(McpToolCallSchema, { args, result }) }));
  const err = (text: string) => done(text, true, { result: { case: "error", value: { error: text } } });
  const res = r.result;
  switch (res.case) {
    case "success": {
      const text = mcpContentText(res.value.content);
      const structured = Object.keys(res.value.structuredContent ?? {}).length > 0 ? JSON.stringify(res.value.structuredContent) : "";
      const body = text || structured || "(the tool returned no content)";
      return done(res.value.isError ? `MCP tool ${label} reported an error:\n${body}` : body, res.value.isError, {
        result: { case: "success", value: res.value },
      });
    }
    case "error":
      return err(`MCP tool ${label} failed: ${res.value.error}`);
    case "rejected":
      return done(`The user rejected the MCP call ${label}${res.value.reason ? `: ${res.value.reason}` : "."}`, true, { result: { case: "rejected", value: res.value } });
    case "permissionDenied":
      return done(`Permission denied calling ${label}${res.value.error ? `: ${res.value.error}` : "."}`, true, { result: { case: "permissionDenied", value: res.value } });
    case "toolNotFound":
      return err(`MCP tool ${res.value.name || label} was not found.${res.value.availableTools.length ? ` Available: ${res.value.availableTools.slice(0, MAX_LIST_ENTRIES).join(", ")}.` : ""}`);
    case "serverNotFound":
      return err(`MCP server ${res.value.name || args?.providerIdentifier || ""} was not found.${res.value.availableServers.length ? ` Available: ${res.value.availableServers.join(", ")}.` : ""}`);
    case "approved":
      return err(`The client only approved the MCP call ${label} without running it.`);
    case undefined:
      return err("The client returned an empty MCP result.");
  }
}

export function completeListMcpResources(plan: ExecPlan, r: ListMcpResourcesExecResult): ToolOutcome {
  const args = plan.exec.case === "listMcpResourcesExecArgs" ? plan.exec.value : undefined;
  const completed = toolCall(plan.callId, { case: "listMcpResourcesToolCall", value: create(ListMcpResourcesToolCallSchema, { args, result: r }) });
  const res = r.result;
  switch (res.case) {
    case "success": {
      const lines = res.value.resources.map((x) =>
        `- ${x.server}: ${x.uri}${x.name ? ` (${x.name})` : ""}${x.mimeType ? ` [${x.mimeType}]` : ""}${x.description ? ` - ${x.description}` : ""}`);
      if (lines.length === 0) return outcome("No MCP resources are available.", false, completed);
      const more = lines.length > MAX_LIST_ENTRIES ? `\n[... ${lines.length - MAX_LIST_ENTRIES} more resources; filter by server.]` : "";
      return outcome(`${lines.slice(0, MAX_LIST_ENTRIES).join("\n")}${more}`, false, completed);
    }
    case "error":
      return outcome(`Could not list MCP resources: ${res.value.error}`, true, completed);
    case "rejected":
      return outcome(`The user rejected listing MCP resources${res.value.reason ? `: ${res.value.reason}` : "."}`, true, completed);
    case undefined:
      return outcome("The client returned an empty MCP resource list.", true, completed);
  }
}

export function completeReadMcpResource(plan: ExecPlan, r: ReadMcpResourceExecResult): ToolOutcome {
  const args = plan.exec.case === "readMcpResourceExecArgs" ? plan.exec.value : undefined;
  const res = r.result;
  const uiResult = res.case === "success" && res.value.content.case === "text"
    ? { ...r, result: { case: "success" as const, value: { ...res.value, content: { case: "text" as const, value: capUi(res.value.content.value) } } } }
    : r;
  const completed = toolCall(plan.callId, { case: "readMcpResourceToolCall", value: create(ReadMcpResourceToolCallSchema, { args, result: uiResult }) });
  switch (res.case) {
    case "success": {
      const c = res.value.content;
      if (res.value.downloadPath) return outcome(`Saved ${res.value.uri} to ${res.value.downloadPath}.`, false, completed);
      if (c.case === "text") return outcome(c.value, false, completed);
      if (c.case === "blob") return outcome(`${res.value.uri} is binary (${res.value.mimeType ?? "unknown type"}, ${c.value.length} bytes); pass download_path to save it.`, false, completed);
      return outcome(`${res.value.uri} has no content.`, false, completed);
    }
    case "error":
      return outcome(`Could not read ${res.value.uri || args?.uri}: ${res.value.error}`, true, completed);
    case "rejected":
      return outcome(`The user rejected reading ${res.value.uri || args?.uri}${res.value.reason ? `: ${res.value.reason}` : "."}`, true, completed);
    case "notFound":
      return outcome(`MCP resource not found: ${res.value.uri || args?.uri}. Use ListMcpResources to see what exists.`, true, completed);
    case undefined:
      return outcome("The client returned an empty MCP resource result.", true, completed);
  }
}

export function completeSubagent(plan: ExecPlan, r: SubagentResult): ToolOutcome {
  const args = plan.started.tool.case === "taskToolCall" ? plan.started.tool.value.args : undefined;
  const done = (text: string, isError: boolean, result: MessageInitShape<typeof TaskToolCallSchema>["result"]) =>
    outcome(text, isError, toolCall(plan.callId, { case: "taskToolCall", value: create(TaskToolCallSchema, { args, result }) }));
  const res = r.result;
  switch (res.case) {
    case "success": {
      const s = res.value;
      const background = s.backgroundReason !== SubagentBackgroundReason.UNSPECIFIED;
      const text = background
        ? `The subagent continues in the background (agent id ${s.agentId}). Its result arrives later; do not wait for it unless needed.`
        : `${s.finalMessage?.trim() || "The subagent finished without a final message."}\n\n(agent id ${s.agentId}, ${s.toolCallCount} tool calls)`;
      return done(text, false, {
        result: {
          case: "success",
          value: { agentId: s.agentId, isBackground: background, backgroundReason: s.backgroundReason, transcriptPath: s.transcriptPath, resultSuffix: s.finalMessage ? capUi(s.finalMessage) : undefined },
        },
      });
    }
    case "error":
      return done(`The subagent failed: ${res.value.error}`, true, { result: { case: "error", value: { error: res.value.error } } });
    case undefined:
      return done("The client returned an empty subagent result.", true, { result: { case: "error", value: { error: "empty result" } } });
  }
}

/** WebFetch (after approval) runs as `fetch_args`; it renders as a `web_fetch_tool_call`. */
export function completeFetch(plan: ExecPlan, r: FetchResult): ToolOutcome {
  const args = plan.started.tool.case === "webFetchToolCall" ? plan.started.tool.value.args : undefined;
  const url = args?.url ?? "";
  const done = (text: string, isError: boolean, result: MessageInitShape<typeof WebFetchToolCallSchema>["result"]) =>
    outcome(text, isError, toolCall(plan.callId, { case: "webFetchToolCall", value: create(WebFetchToolCallSchema, { args, result }) }));
  const res = r.result;
  switch (res.case) {
    case "success": {
      const s = res.value;
      const failed = s.statusCode >= 400;
      const head = `${s.url || url} (HTTP ${s.statusCode}${s.contentType ? `, ${s.contentType}` : ""})`;
      return done(`${head}\n\n${s.content || "(empty body)"}`, failed, {
        result: { case: "success", value: { url: s.url || url, markdown: capUi(s.content) } },
      });
    }
    case "error":
      return done(`Could not fetch ${res.value.url || url}: ${res.value.error}`, true, { result: { case: "error", value: { url: res.value.url || url, error: res.value.error } } });
    case undefined:
      return done("The client returned an empty fetch result.", true, { result: { case: "error", value: { url, error: "empty result" } } });
  }
}

export function completeWriteShellStdin(plan: ExecPlan, r: WriteShellStdinResult): ToolOutcome {
  const args = plan.exec.case === "writeShellStdinArgs" ? plan.exec.value : undefined;
  const completed = toolCall(plan.callId, { case: "writeShellStdinToolCall", value: create(WriteShellStdinToolCallSchema, { args, result: r }) });
  const res = r.result;
  switch (res.case) {
    case "success":
      return outcome(`Wrote ${args?.chars.length ?? 0} characters to shell ${res.value.shellId}. Use AwaitShell to see its output.`, false, completed);
    case "error":
      return outcome(`Could not write to shell ${args?.shellId ?? ""}: ${res.value.error}`, true, completed);
    case undefined:
      return outcome("The client returned an empty stdin result.", true, completed);
  }
}

export function completeForceBackgroundShell(plan: ExecPlan, r: ForceBackgroundShellResult): ToolOutcome {
  const target = plan.exec.case === "forceBackgroundShellArgs" ? plan.exec.value.toolCallId : "";
  const startedArgs = plan.started.tool.case === "shellToolCall" ? plan.started.tool.value.args : undefined;
  const description = plan.started.tool.case === "shellToolCall" ? plan.started.tool.value.description : undefined;
  if (r.status === ForceBackgroundShellStatus.ACCEPTED && r.shellResult) {
    return renderShellResult({ callId: plan.callId, args: startedArgs, description }, r.shellResult);
  }
  const completed = toolCall(plan.callId, {
    case: "shellToolCall",
    value: create(ShellToolCallSchema, { args: startedArgs, description }),
  });
  if (r.status === ForceBackgroundShellStatus.ACCEPTED) return outcome(`Shell call ${target} now runs in the background.`, false, completed);
  if (r.status === ForceBackgroundShellStatus.NOT_FOUND) return outcome(`No running shell belongs to tool call ${target}; it may have finished already.`, true, completed);
  return outcome(`The client did not confirm moving shell call ${target} to the background.`, true, completed);
}
