import { create } from "@bufbuild/protobuf";
import {
  AwaitArgsSchema, ForceBackgroundShellArgsSchema, ShellArgsSchema, ShellToolCallSchema, TimeoutBehavior,
  WriteShellStdinArgsSchema, AwaitToolCallSchema, WriteShellStdinToolCallSchema,
} from "@byok/wire";
import { toolCall } from "./outcome.js";
import type {
  AwaitShellToolInput, ForceBackgroundShellToolInput, ShellToolInput, WriteShellStdinToolInput,
} from "./specs.js";
import type { AwaitShellPlan, ExecPlan } from "./types.js";

/** Shell waits this long by default before the command moves to the background. */
export const DEFAULT_SHELL_TIMEOUT_MS = 120_000;
/** AwaitShell waits this long by default. */
export const DEFAULT_AWAIT_BLOCK_MS = 30_000;

/**
 * Shell → `shell_stream_args` (streaming). `timeout_behavior` is BACKGROUND: a command still
 * running at the timeout keeps running and the stream ends with `backgrounded` (AwaitShell
 * picks it up). `parsing_result.parsing_failed` is set because the gateway does not parse
 * shell syntax: the client must not treat the command as pre-approved by an allowlist.
 */
export function planShell(callId: string, toolName: string, a: ShellToolInput): ExecPlan {
  const args = create(ShellArgsSchema, {
    command: a.command,
    workingDirectory: a.working_directory ?? "",
    timeout: a.timeout_ms ?? DEFAULT_SHELL_TIMEOUT_MS,
    toolCallId: callId,
    isBackground: a.is_background ?? false,
    timeoutBehavior: TimeoutBehavior.BACKGROUND,
    description: a.description,
    parsingResult: { parsingFailed: true },
  });
  return {
    kind: "exec", callId, toolName, streaming: true,
    exec: { case: "shellStreamArgs", value: args },
    started: toolCall(callId, { case: "shellToolCall", value: create(ShellToolCallSchema, { args, description: a.description }) }),
  };
}

export function planWriteShellStdin(callId: string, toolName: string, a: WriteShellStdinToolInput): ExecPlan {
  const args = create(WriteShellStdinArgsSchema, { shellId: a.shell_id, chars: a.chars });
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: { case: "writeShellStdinArgs", value: args },
    started: toolCall(callId, { case: "writeShellStdinToolCall", value: create(WriteShellStdinToolCallSchema, { args }) }),
  };
}

/**
 * ForceBackgroundShell → `force_background_shell_args{tool_call_id}`. The wire has no
 * dedicated ToolCall variant: it renders as a `shell_tool_call` whose args name the target
 * call, with the shell result the client returns (when it returns one).
 */
export function planForceBackgroundShell(callId: string, toolName: string, a: ForceBackgroundShellToolInput): ExecPlan {
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: { case: "forceBackgroundShellArgs", value: create(ForceBackgroundShellArgsSchema, { toolCallId: a.tool_call_id }) },
    started: toolCall(callId, {
      case: "shellToolCall",
      value: create(ShellToolCallSchema, {
        args: { toolCallId: a.tool_call_id, isBackground: true },
        description: `Move shell call ${a.tool_call_id} to the background`,
      }),
    }),
  };
}

/** AwaitShell: no exec branch (docs/protocol.md); the engine waits and calls `completeAwaitShell`. */
export function planAwaitShell(callId: string, toolName: string, a: AwaitShellToolInput): AwaitShellPlan {
  const blockUntilMs = a.block_until_ms ?? DEFAULT_AWAIT_BLOCK_MS;
  const args = create(AwaitArgsSchema, { taskId: String(a.shell_id), blockUntilMs, regex: a.pattern });
  return {
    kind: "await_shell", callId, toolName, shellId: a.shell_id, blockUntilMs, args,
    started: toolCall(callId, { case: "awaitToolCall", value: create(AwaitToolCallSchema, { args }) }),
  };
}
