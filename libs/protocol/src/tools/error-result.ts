import { clone, create } from "@bufbuild/protobuf";
import { ShellResultSchema, ToolCallSchema, type ToolCall } from "@byok/wire";

/**
 * The completed `ToolCall` of a failed call: the started variant (same args) with its error
 * result branch set to `message`. Variants without an error branch are returned with args only.
 * Never mutates `started`.
 */
export function withErrorResult(started: ToolCall, message: string): ToolCall {
  const tc = clone(ToolCallSchema, started);
  const t = tc.tool;
  const error = message;
  switch (t.case) {
    case "readToolCall":
      t.value.result = { $typeName: "agent.v1.ReadToolResult", result: { case: "error", value: { $typeName: "agent.v1.ReadToolError", errorMessage: error } } };
      break;
    case "editToolCall":
      t.value.result = {
        $typeName: "agent.v1.EditResult",
        result: { case: "error", value: { $typeName: "agent.v1.EditError", path: t.value.args?.path ?? "", error, modelVisibleError: error } },
      };
      break;
    case "deleteToolCall":
      t.value.result = {
        $typeName: "agent.v1.DeleteResult",
        result: { case: "error", value: { $typeName: "agent.v1.DeleteError", path: t.value.args?.path ?? "", error } },
      };
      break;
    case "grepToolCall":
      t.value.result = { $typeName: "agent.v1.GrepResult", result: { case: "error", value: { $typeName: "agent.v1.GrepError", error } } };
      break;
    case "globToolCall":
      t.value.result = { $typeName: "agent.v1.GlobToolResult", result: { case: "error", value: { $typeName: "agent.v1.GlobToolError", error } } };
      break;
    case "lsToolCall":
      t.value.result = { $typeName: "agent.v1.LsResult", result: { case: "error", value: { $typeName: "agent.v1.LsError", path: t.value.args?.path ?? "", error } } };
      break;
    case "readLintsToolCall":
      t.value.result = {
        $typeName: "agent.v1.ReadLintsToolResult",
        result: { case: "error", value: { $typeName: "agent.v1.ReadLintsToolError", errorMessage: error } },
      };
      break;
    case "shellToolCall":
      t.value.result = create(ShellResultSchema, {
        result: { case: "spawnError", value: { command: t.value.args?.command ?? "", workingDirectory: t.value.args?.workingDirectory ?? "", error } },
      });
      break;
    case "mcpToolCall":
      t.value.result = {
        $typeName: "agent.v1.McpToolResult",
        result: { case: "error", value: { $typeName: "agent.v1.McpToolError", error, readToolDefReminder: "" } },
      };
      break;
    case "listMcpResourcesToolCall":
      t.value.result = {
        $typeName: "agent.v1.ListMcpResourcesExecResult",
        result: { case: "error", value: { $typeName: "agent.v1.ListMcpResourcesError", error } },
      };
      break;
    case "readMcpResourceToolCall":
      t.value.result = {
        $typeName: "agent.v1.ReadMcpResourceExecResult",
        result: { case: "error", value: { $typeName: "agent.v1.ReadMcpResourceError", uri: t.value.args?.uri ?? "", error } },
      };
      break;
    case "taskToolCall":
      t.value.result = { $typeName: "agent.v1.TaskResult", result: { case: "error", value: { $typeName: "agent.v1.TaskError", error } } };
      break;
    case "askQuestionToolCall":
      t.value.result = {
        $typeName: "agent.v1.AskQuestionResult",
        result: { case: "error", value: { $typeName: "agent.v1.AskQuestionError", errorMessage: error } },
      };
      break;
    case "createPlanToolCall":
      t.value.result = {
        $typeName: "agent.v1.CreatePlanResult", planUri: "",
        result: { case: "error", value: { $typeName: "agent.v1.CreatePlanError", error } },
      };
      break;
    case "webSearchToolCall":
      t.value.result = { $typeName: "agent.v1.WebSearchResult", result: { case: "error", value: { $typeName: "agent.v1.WebSearchError", error } } };
      break;
    case "webFetchToolCall":
      t.value.result = {
        $typeName: "agent.v1.WebFetchResult",
        result: { case: "error", value: { $typeName: "agent.v1.WebFetchError", url: t.value.args?.url ?? "", error } },
      };
      break;
    case "switchModeToolCall":
      t.value.result = { $typeName: "agent.v1.SwitchModeResult", result: { case: "error", value: { $typeName: "agent.v1.SwitchModeError", error } } };
      break;
    case "writeShellStdinToolCall":
      t.value.result = {
        $typeName: "agent.v1.WriteShellStdinResult",
        result: { case: "error", value: { $typeName: "agent.v1.WriteShellStdinError", error } },
      };
      break;
    case "awaitToolCall":
      t.value.result = { $typeName: "agent.v1.AwaitResult", result: { case: "error", value: { $typeName: "agent.v1.AwaitError", error } } };
      break;
    case "updateTodosToolCall":
      t.value.result = { $typeName: "agent.v1.UpdateTodosResult", result: { case: "error", value: { $typeName: "agent.v1.UpdateTodosError", error } } };
      break;
    default:
      break;
  }
  return tc;
}
