import { clone, create } from "@bufbuild/protobuf";
import { ShellResultSchema, ShellToolCallSchema, type ShellArgs, type ShellResult } from "@byok/wire";
import { MAX_SHELL_MODEL_CHARS, SHELL_HEAD_SHARE, capUi, truncateMiddle } from "./limits.js";
import { outcome, toolCall } from "./outcome.js";
import type { ToolOutcome } from "./types.js";

/**
 * Model text and `shell_tool_call` of a finished shell command, shared by the one-shot
 * `shell_result` and the aggregated `shell_stream`. Output the model sees is capped at
 * {@link MAX_SHELL_MODEL_CHARS} (head + tail kept, errors are usually at the end); the UI copy
 * at `MAX_UI_TEXT_CHARS` per stream.
 */
export interface ShellCallInfo {
  callId: string;
  args: ShellArgs | undefined;
  description?: string | undefined;
}

/** Formats stdout / stderr for the model within the shell budget (stderr gets at most half when both are long). */
export function formatShellOutput(rawStdout: string, rawStderr: string): string {
  const stdout = rawStdout.replace(/\s+$/, "");
  const stderr = rawStderr.replace(/\s+$/, "");
  const budgetErr = stderr.length === 0 ? 0 : Math.min(stderr.length, Math.max(MAX_SHELL_MODEL_CHARS / 2, MAX_SHELL_MODEL_CHARS - stdout.length));
  const budgetOut = MAX_SHELL_MODEL_CHARS - budgetErr;
  const parts: string[] = [];
  if (stdout.length > 0) parts.push(`stdout:\n${truncateMiddle(stdout, budgetOut, SHELL_HEAD_SHARE)}`);
  if (stderr.length > 0) parts.push(`stderr:\n${truncateMiddle(stderr, budgetErr, SHELL_HEAD_SHARE)}`);
  return parts.length > 0 ? parts.join("\n\n") : "(no output)";
}

function completedShell(info: ShellCallInfo, result: ShellResult) {
  return toolCall(info.callId, {
    case: "shellToolCall",
    value: create(ShellToolCallSchema, { args: info.args, result, description: info.description }),
  });
}

/** Copies the result with stdout / stderr / interleaved output capped for the UI. */
function capResultForUi(r: ShellResult): ShellResult {
  const c = clone(ShellResultSchema, r);
  const res = c.result;
  if (res.case === "success" || res.case === "failure") {
    res.value.stdout = capUi(res.value.stdout);
    res.value.stderr = capUi(res.value.stderr);
    if (res.value.interleavedOutput !== undefined) res.value.interleavedOutput = capUi(res.value.interleavedOutput);
  }
  return c;
}

export function renderShellResult(info: ShellCallInfo, r: ShellResult): ToolOutcome {
  const command = info.args?.command ?? "";
  const completed = completedShell(info, capResultForUi(r));
  const res = r.result;
  switch (res.case) {
    case "success":
    case "failure": {
      const v = res.value;
      const output = v.interleavedOutput !== undefined && v.interleavedOutput !== ""
        ? truncateMiddle(v.interleavedOutput, MAX_SHELL_MODEL_CHARS, SHELL_HEAD_SHARE)
        : formatShellOutput(v.stdout, v.stderr);
      const shellId = res.case === "success" ? res.value.shellId : undefined;
      if (r.isBackground || shellId !== undefined) {
        const pid = r.pid ?? (res.case === "success" ? res.value.pid : undefined);
        return outcome(backgroundText(shellId, pid, output), false, completed);
      }
      const aborted = res.case === "failure" && res.value.aborted ? " (aborted)" : "";
      const signal = v.signal ? `, signal ${v.signal}` : "";
      // A non-zero exit is a result the model reads (e.g. failing tests), not a tool error; an abort is.
      return outcome(`Exit code: ${v.exitCode}${signal}${aborted}\n\n${output}`, aborted !== "", completed);
    }
    case "timeout":
      return outcome(`The command timed out after ${res.value.timeoutMs} ms and was stopped.`, true, completed);
    case "rejected":
      return outcome(`The user rejected the command \`${command}\`${res.value.reason ? `: ${res.value.reason}` : "."} Do not retry it unchanged; ask the user or find another way.`, true, completed);
    case "spawnError":
      return outcome(`The command could not be started: ${res.value.error}`, true, completed);
    case "permissionDenied":
      return outcome(`Permission denied running the command${res.value.error ? `: ${res.value.error}` : "."}${res.value.isReadonly ? " (the workspace is read-only)" : ""}`, true, completed);
    case undefined:
      return outcome("The client returned an empty shell result.", true, completed);
  }
}

/** The text telling the model a command continues in the background. */
export function backgroundText(shellId: number | undefined, pid: number | undefined, output: string): string {
  const id = shellId !== undefined ? ` as shell ${shellId}` : "";
  const p = pid !== undefined ? ` (pid ${pid})` : "";
  const how = shellId !== undefined
    ? `Use AwaitShell with shell_id ${shellId} to wait for it, WriteShellStdin to send it input.`
    : "It keeps running; its output is not awaited.";
  return `The command is still running in the background${id}${p}. ${how}\n\nOutput so far:\n${output}`;
}
