import { create } from "@bufbuild/protobuf";
import { AwaitToolCallSchema } from "@byok/wire";
import { MAX_SHELL_MODEL_CHARS, SHELL_HEAD_SHARE, truncateMiddle } from "./limits.js";
import { outcome, toolCall } from "./outcome.js";
import type { AwaitShellPlan, ToolOutcome } from "./types.js";

/**
 * What the engine observed while waiting for a background shell (AwaitShell has no exec
 * branch; docs/protocol.md "Tools per mode"). `output` is the shell's recent output, if known.
 */
export type AwaitShellStatus =
  | { kind: "completed"; exitCode?: number; runtimeMs: number; output?: string; regexMatch?: string; outputFilePath?: string }
  | { kind: "still_running"; runtimeMs: number; output?: string; regexMatch?: string; outputFilePath?: string }
  | { kind: "error"; message: string };

/** Completes AwaitShell: model text + `await_tool_call` with the matching `AwaitResult` branch. */
export function completeAwaitShell(plan: AwaitShellPlan, status: AwaitShellStatus): ToolOutcome {
  const args = plan.args;
  const taskId = String(plan.shellId);
  const output = status.kind === "error" || !status.output ? "" : `\n\nRecent output:\n${truncateMiddle(status.output, MAX_SHELL_MODEL_CHARS, SHELL_HEAD_SHARE)}`;
  switch (status.kind) {
    case "completed": {
      const completed = toolCall(plan.callId, {
        case: "awaitToolCall",
        value: create(AwaitToolCallSchema, {
          args,
          result: {
            result: {
              case: "complete",
              value: {
                taskId, runtimeMs: BigInt(Math.max(0, Math.round(status.runtimeMs))), exitCode: status.exitCode,
                regexRequested: args.regex !== undefined, regexMatch: status.regexMatch, outputFilePath: status.outputFilePath ?? "",
                outputLength: BigInt(status.output?.length ?? 0),
              },
            },
          },
        }),
      });
      const code = status.exitCode !== undefined ? ` with exit code ${status.exitCode}` : "";
      return outcome(`Shell ${taskId} finished${code}.${output}`, false, completed);
    }
    case "still_running": {
      const completed = toolCall(plan.callId, {
        case: "awaitToolCall",
        value: create(AwaitToolCallSchema, {
          args,
          result: {
            result: {
              case: "stillRunning",
              value: {
                taskId, runtimeMs: BigInt(Math.max(0, Math.round(status.runtimeMs))), regexRequested: args.regex !== undefined,
                regexMatch: status.regexMatch, outputFilePath: status.outputFilePath ?? "", outputLength: BigInt(status.output?.length ?? 0),
              },
            },
          },
        }),
      });
      const why = status.regexMatch !== undefined ? `its output matched ${JSON.stringify(status.regexMatch)}` : `waited ${plan.blockUntilMs} ms`;
      return outcome(`Shell ${taskId} is still running (${why}).${output}`, false, completed);
    }
    case "error": {
      const completed = toolCall(plan.callId, {
        case: "awaitToolCall",
        value: create(AwaitToolCallSchema, { args, result: { result: { case: "error", value: { error: status.message } } } }),
      });
      return outcome(`Cannot await shell ${taskId}: ${status.message}`, true, completed);
    }
  }
}
