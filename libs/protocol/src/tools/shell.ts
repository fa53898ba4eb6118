import { create } from "@bufbuild/protobuf";
import { ShellResultSchema, ShellToolCallSchema, type InteractionUpdate, type ShellArgs, type ShellResult, type ShellStream } from "@byok/wire";
import { MAX_SHELL_BUFFER_CHARS } from "./limits.js";
import { outcome, toolCall } from "./outcome.js";
import { withErrorResult } from "./error-result.js";
import { formatShellOutput, renderShellResult } from "./shell-render.js";
import type { ExecPlan, ToolOutcome } from "./types.js";

/**
 * Aggregation of one `shell_stream` (docs/protocol.md "Bridges"): start, stdout, stderr, exit,
 * rejected, permission_denied, backgrounded (and sandbox_unsupported, hook_context).
 *
 * Guarantees:
 * - stdout / stderr are mirrored live as `shell_output_delta` plus a `tool_call_delta`
 *   (`shell_tool_call_delta`) carrying the call id; start and exit as `shell_output_delta`;
 * - exactly one event ends the stream with `done`: exit, rejected, permission_denied,
 *   sandbox_unsupported or backgrounded (backgrounded: the model is told the shell continues
 *   in the background with its id); events after that are ignored (no updates, no outcome);
 * - memory is bounded: each channel keeps its first and last `MAX_SHELL_BUFFER_CHARS / 2`
 *   characters and counts what was dropped in between.
 */
export type InteractionUpdateMessage = Exclude<InteractionUpdate["message"], { case: undefined }>;

interface CappedBuffer {
  readonly head: string;
  readonly tail: string;
  /** Characters dropped between head and tail. */
  readonly elided: number;
}

export interface ShellAgg {
  readonly callId: string;
  readonly modelCallId: string;
  readonly args: ShellArgs | undefined;
  readonly description: string | undefined;
  readonly started: boolean;
  readonly stdout: CappedBuffer;
  readonly stderr: CappedBuffer;
  readonly done: boolean;
}

export interface ShellStep {
  agg: ShellAgg;
  updates: InteractionUpdateMessage[];
  done?: ToolOutcome;
}

const EMPTY: CappedBuffer = { head: "", tail: "", elided: 0 };
const HALF = Math.floor(MAX_SHELL_BUFFER_CHARS / 2);

function append(b: CappedBuffer, data: string): CappedBuffer {
  if (b.elided === 0 && b.tail === "" && b.head.length + data.length <= MAX_SHELL_BUFFER_CHARS) return { ...b, head: b.head + data };
  // Switch to head + rolling tail.
  let head = b.head;
  let rest = data;
  if (head.length < HALF) {
    const take = HALF - head.length;
    head += rest.slice(0, take);
    rest = rest.slice(take);
  } else if (b.elided === 0 && b.tail === "" && head.length > HALF) {
    rest = head.slice(HALF) + rest;
    head = head.slice(0, HALF);
  }
  const combined = b.tail + rest;
  const dropped = Math.max(0, combined.length - HALF);
  return { head, tail: combined.slice(dropped), elided: b.elided + dropped };
}

/** The text of a buffer, with a note where characters were dropped. */
export function bufferText(b: CappedBuffer): string {
  return b.elided === 0 ? b.head + b.tail : `${b.head}\n[... ${b.elided} characters omitted ...]\n${b.tail}`;
}

/** Starts aggregating the stream of a Shell exec plan. `modelCallId` goes into `tool_call_delta`. */
export function startShell(plan: Pick<ExecPlan, "callId" | "exec" | "started">, modelCallId = ""): ShellAgg {
  const args = plan.exec.case === "shellStreamArgs" ? plan.exec.value : undefined;
  const description = plan.started.tool.case === "shellToolCall" ? plan.started.tool.value.description : undefined;
  return { callId: plan.callId, modelCallId, args, description, started: false, stdout: EMPTY, stderr: EMPTY, done: false };
}

function streamDelta(agg: ShellAgg, channel: "stdout" | "stderr", data: string): InteractionUpdateMessage[] {
  return [
    {
      case: "shellOutputDelta",
      value: { $typeName: "agent.v1.ShellOutputDeltaUpdate", event: channel === "stdout"
        ? { case: "stdout", value: { $typeName: "agent.v1.ShellStreamStdout", data } }
        : { case: "stderr", value: { $typeName: "agent.v1.ShellStreamStderr", data } } },
    },
    {
      case: "toolCallDelta",
      value: {
        $typeName: "agent.v1.ToolCallDeltaUpdate",
        callId: agg.callId,
        modelCallId: agg.modelCallId,
        toolCallDelta: {
          $typeName: "agent.v1.ToolCallDelta",
          delta: {
            case: "shellToolCallDelta",
            value: {
              $typeName: "agent.v1.ShellToolCallDelta",
              delta: channel === "stdout"
                ? { case: "stdout", value: { $typeName: "agent.v1.ShellToolCallStdoutDelta", content: data } }
                : { case: "stderr", value: { $typeName: "agent.v1.ShellToolCallStderrDelta", content: data } },
            },
          },
        },
      },
    },
  ];
}

function finish(agg: ShellAgg, result: ShellResult, updates: InteractionUpdateMessage[] = []): ShellStep {
  const done = renderShellResult({ callId: agg.callId, args: agg.args, description: agg.description }, result);
  return { agg: { ...agg, done: true }, updates, done };
}

/** Applies one stream event. Pure; never throws. */
export function applyShellEvent(agg: ShellAgg, ev: ShellStream): ShellStep {
  if (agg.done) return { agg, updates: [] };
  const command = agg.args?.command ?? "";
  const cwd = agg.args?.workingDirectory ?? "";
  const e = ev.event;
  switch (e.case) {
    case "start":
      return {
        agg: { ...agg, started: true },
        updates: [{ case: "shellOutputDelta", value: { $typeName: "agent.v1.ShellOutputDeltaUpdate", event: { case: "start", value: e.value } } }],
      };
    case "stdout":
      if (e.value.data === "") return { agg, updates: [] };
      return { agg: { ...agg, stdout: append(agg.stdout, e.value.data) }, updates: streamDelta(agg, "stdout", e.value.data) };
    case "stderr":
      if (e.value.data === "") return { agg, updates: [] };
      return { agg: { ...agg, stderr: append(agg.stderr, e.value.data) }, updates: streamDelta(agg, "stderr", e.value.data) };
    case "exit": {
      const x = e.value;
      const common = {
        command, workingDirectory: x.cwd || cwd, exitCode: x.code, signal: "",
        stdout: bufferText(agg.stdout), stderr: bufferText(agg.stderr),
        executionTime: x.localExecutionTimeMs ?? 0, localExecutionTimeMs: x.localExecutionTimeMs, outputLocation: x.outputLocation,
      };
      const result = create(ShellResultSchema, x.code === 0 && !x.aborted
        ? { result: { case: "success", value: common } }
        : { result: { case: "failure", value: { ...common, aborted: x.aborted, abortReason: x.abortReason } } });
      return finish(agg, result, [{ case: "shellOutputDelta", value: { $typeName: "agent.v1.ShellOutputDeltaUpdate", event: { case: "exit", value: x } } }]);
    }
    case "rejected":
      return finish(agg, create(ShellResultSchema, { result: { case: "rejected", value: e.value } }));
    case "permissionDenied":
      return finish(agg, create(ShellResultSchema, { result: { case: "permissionDenied", value: e.value } }));
    case "sandboxUnsupported":
      return finish(agg, create(ShellResultSchema, {
        result: { case: "spawnError", value: { command, workingDirectory: cwd, error: `sandbox not supported: ${e.value.reason || e.value.sandboxPolicyType}` } },
      }));
    case "backgrounded": {
      const b = e.value;
      return finish(agg, create(ShellResultSchema, {
        isBackground: true,
        pid: b.pid,
        result: {
          case: "success",
          value: {
            command: b.command || command, workingDirectory: b.workingDirectory || cwd, exitCode: 0,
            stdout: bufferText(agg.stdout), stderr: bufferText(agg.stderr),
            shellId: b.shellId, pid: b.pid, msToWait: b.msToWait, backgroundReason: b.reason,
          },
        },
      }));
    }
    case "hookContext":
    case undefined:
      return { agg, updates: [] };
  }
}

/**
 * Ends a stream that stopped without a terminal event (timeout, `throw`, `stream_close`
 * without exit, abort): a tool error with `message` and the output received so far.
 */
export function failShell(agg: ShellAgg, message: string): ShellStep {
  if (agg.done) return { agg, updates: [] };
  const out = formatShellOutput(bufferText(agg.stdout), bufferText(agg.stderr));
  const text = `${message}${out === "(no output)" ? "" : `\n\nOutput before it stopped:\n${out}`}`;
  const started = toolCall(agg.callId, { case: "shellToolCall", value: create(ShellToolCallSchema, { args: agg.args, description: agg.description }) });
  const completed = withErrorResult(started, message);
  return { agg: { ...agg, done: true }, updates: [], done: outcome(text, true, completed) };
}
