import type { InterruptedPendingToolCallResolution, ToolCall } from "@byok/wire";
import { toolErrorOutcome } from "./complete.js";
import { outcome } from "./outcome.js";
import { renderShellResult } from "./shell-render.js";
import type { ToolOutcome } from "./types.js";

/**
 * The result of a call the run stopped waiting for (cancel, supersede, reader gone, output
 * cap): what the client reported for it in `cancel_action.interrupted_pending_tool_call_resolutions`
 * (a shell that finished, a subagent's result), else a tool error saying why the call has no
 * result. Every call in history gets one, so no provider ever sees a call without its result.
 */
export function interruptedOutcome(
  call: { callId: string; started: ToolCall },
  reason: string,
  resolution: InterruptedPendingToolCallResolution | undefined,
): ToolOutcome {
  const r = resolution?.resolution;
  if (r?.case === "shellResult") {
    const tc = call.started.tool.case === "shellToolCall" ? call.started.tool.value : undefined;
    return renderShellResult({ callId: call.callId, args: tc?.args, description: tc?.description }, r.value);
  }
  if (r?.case === "taskResult") {
    const t = r.value.result;
    if (t.case === "error") return toolErrorOutcome(call, `The subagent failed: ${t.value.error}`);
    if (t.case === "success") {
      const last = t.value.conversationSteps.findLast((s) => s.message.case === "assistantMessage");
      const text = last?.message.case === "assistantMessage" ? last.message.value.text : t.value.resultSuffix ?? "";
      return outcome(`${text.trim() || "The subagent finished without a final message."}\n\n(${reason})`, false, call.started);
    }
  }
  return toolErrorOutcome(call, `${reason}; the tool call did not return a result.`);
}
