import type { RunStart } from "./run-request.js";
import type { Effect, RunState } from "./run-types.js";
import { gated } from "./transition.js";

// Automatic compaction's pre_compact hook (docs/protocol.md "Bridges").

/** Whether the client declared a pre-compaction hook (docs/protocol.md "Bridges": `pre_compact`). */
export function declaresPreCompact(run: RunStart | undefined): boolean {
  return (run?.hookSteps ?? []).some((h) => h.replace(/[_-]/g, "").toLowerCase() === "precompact");
}

/** Compaction after a provider's refusal may still be tried: not yet this turn, and not on a summary run. */
export function mayCompactAfterRefusal(s: RunState): boolean {
  return s.run !== undefined && !s.compactedInTurn && s.compacting === undefined && s.run.kind !== "summarize";
}

/** The pre_compact hook answered (or timed out): run the summary pass, guided by its reply. */
export function afterPreCompact(s: RunState, hookMessage: string | undefined): { state: RunState; effects: Effect[] } {
  if (!s.compacting || !s.current) return { state: s, effects: [] };
  return gated({ ...s, compacting: { ...s.compacting, hook: undefined, hookMessage: hookMessage || undefined } }, [
    { type: "start_model_call", modelCallId: s.current.modelCallId, attempt: s.attempt },
  ]);
}
