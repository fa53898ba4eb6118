import type { ClientEvent } from "./classify.js";
import { isInTurn, isRunningTools } from "./phase.js";
import { frames } from "./frames.js";
import type { Effect, RunState } from "./run-types.js";
import { backgroundCall, cancelSubagent, onBackgroundCompletions } from "./tool-loop.js";
import { gated, ignored, toolStep } from "./transition.js";

/** A top-level conversation_action on a live run: acts on it, supersedes nothing (docs/protocol.md). */
export function onLiveAction(s: RunState, action: Extract<ClientEvent, { kind: "conversation_action" }>["action"]): { state: RunState; effects: Effect[] } {
  const a = action.action;
  switch (a.case) {
    case "backgroundShellAction":
    case "backgroundSubagentAction":
      return isRunningTools(s) ? toolStep(backgroundCall(s, a.value.toolCallId)) : ignored(s, a.case);
    case "cancelSubagentAction":
      return isRunningTools(s) ? toolStep(cancelSubagent(s, a.value.subagentId)) : ignored(s, a.case);
    case "backgroundTaskCompletionAction":
      return isRunningTools(s) ? toolStep(onBackgroundCompletions(s, a.value.completions)) : ignored(s, a.case);
    case "injectContextAction": {
      const { injectionId, expectedRunId } = a.value;
      const live = isInTurn(s);
      const reason = !live
        ? "the run is not running"
        : expectedRunId && s.run?.runId && expectedRunId !== s.run.runId
          ? `the running run is ${s.run.runId}, not ${expectedRunId}`
          : a.value.payload.case === undefined
            ? "the injection carries no context"
            : undefined;
      if (reason) return gated(s, [{ type: "emit", frames: [frames.contextInjection(injectionId, "rejected", { reason })] }]);
      const p = a.value.payload;
      const text = p.case === "userContext" ? (p.value.userMessage?.text ?? "") : p.case === "systemContext" ? `[${p.value.producer}] ${p.value.content}` : "";
      return gated({ ...s, injections: [...s.injections, { id: injectionId, text, kind: a.value.payload.case ?? "" }] }, [
        { type: "emit", frames: [frames.contextInjection(injectionId, "queued")] },
      ]);
    }
    default:
      return { state: s, effects: [{ type: "log", level: "info", message: "conversation action has no effect on a live run", fields: { action: a.case } }] };
  }
}
