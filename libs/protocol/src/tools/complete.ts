import { withErrorResult } from "./error-result.js";
import { outcome } from "./outcome.js";
import {
  completeFetch, completeForceBackgroundShell, completeListMcpResources, completeMcp, completeReadMcpResource,
  completeSubagent, completeWriteShellStdin,
} from "./render-agentic.js";
import { completeDelete, completeRead, completeWrite } from "./render-files.js";
import { completeDiagnostics, completeGlob, completeGrep, completeLs } from "./render-search.js";
import { renderShellResult } from "./shell-render.js";
import type { ExecPlan, ExecRequest, ExecResult, ToolOutcome } from "./types.js";

type ResultCase = NonNullable<ExecResult["case"]>;

/** The `exec_client_message` result branches that answer each exec branch the tool layer sends. */
const EXPECTED: Partial<Record<ExecRequest["case"], readonly ResultCase[]>> = {
  readArgs: ["readResult", "redactedReadResult"],
  writeArgs: ["writeResult"],
  deleteArgs: ["deleteResult"],
  grepArgs: ["grepResult"],
  lsArgs: ["lsResult"],
  diagnosticsArgs: ["diagnosticsResult"],
  shellStreamArgs: ["shellStream", "shellResult"],
  writeShellStdinArgs: ["writeShellStdinResult"],
  forceBackgroundShellArgs: ["forceBackgroundShellResult"],
  subagentArgs: ["subagentResult"],
  mcpArgs: ["mcpResult"],
  listMcpResourcesExecArgs: ["listMcpResourcesExecResult"],
  readMcpResourceExecArgs: ["readMcpResourceExecResult"],
  fetchArgs: ["fetchResult"],
};

/** The result branches that answer `exec` (empty for branches the tool layer never sends). */
export function expectedResultCases(exec: ExecRequest): readonly ResultCase[] {
  return EXPECTED[exec.case] ?? [];
}

/** True when `result` is a branch that answers `exec` (the engine can use it to match results). */
export function resultMatches(exec: ExecRequest, result: ExecResult): boolean {
  return result.case !== undefined && expectedResultCases(exec).includes(result.case);
}

/**
 * A failed call with `message` for the model (timeouts, `exec_client_control_message.throw`,
 * abort, mismatched results, engine-side failures). The completed `ToolCall` is the started
 * variant with its error branch. Works for every plan kind that has a started `ToolCall`.
 */
export function toolErrorOutcome(plan: Pick<ExecPlan, "started">, message: string): ToolOutcome {
  return outcome(message, true, withErrorResult(plan.started, message));
}

/**
 * Completes a non-streaming exec (and a Shell answered with a one-shot `shell_result`).
 * Total: a result of the wrong branch, or a `shell_stream` event (feed those to
 * `applyShellEvent`), gives a tool error outcome instead of throwing.
 */
export function completeExec(plan: ExecPlan, result: ExecResult): ToolOutcome {
  if (!resultMatches(plan.exec, result)) {
    return toolErrorOutcome(plan, `Internal error: the client answered ${plan.toolName} with ${result.case ?? "an empty message"} instead of ${expectedResultCases(plan.exec).join(" or ") || "a known result"}. The tool may or may not have run; check before retrying.`);
  }
  switch (result.case) {
    case "readResult":
    case "redactedReadResult":
      return completeRead(plan, result.value);
    case "writeResult":
      return completeWrite(plan, result.value);
    case "deleteResult":
      return completeDelete(plan, result.value);
    case "grepResult":
      return plan.started.tool.case === "globToolCall" ? completeGlob(plan, result.value) : completeGrep(plan, result.value);
    case "lsResult":
      return completeLs(plan, result.value);
    case "diagnosticsResult":
      return completeDiagnostics(plan, result.value);
    case "shellResult": {
      const tc = plan.started.tool.case === "shellToolCall" ? plan.started.tool.value : undefined;
      return renderShellResult({ callId: plan.callId, args: tc?.args, description: tc?.description }, result.value);
    }
    case "writeShellStdinResult":
      return completeWriteShellStdin(plan, result.value);
    case "forceBackgroundShellResult":
      return completeForceBackgroundShell(plan, result.value);
    case "subagentResult":
      return completeSubagent(plan, result.value);
    case "mcpResult":
      return completeMcp(plan, result.value);
    case "listMcpResourcesExecResult":
      return completeListMcpResources(plan, result.value);
    case "readMcpResourceExecResult":
      return completeReadMcpResource(plan, result.value);
    case "fetchResult":
      return completeFetch(plan, result.value);
    default:
      return toolErrorOutcome(plan, `Internal error: ${plan.toolName} streams its result; the engine must aggregate ${result.case ?? "it"} with applyShellEvent.`);
  }
}
