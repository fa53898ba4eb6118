import type { ChatItem, ToolSpec } from "@byok/providers";
import { DEFAULT_CONTEXT_WINDOW, toolContextOf, toolsFor, type RunState } from "@byok/protocol";
import type { HistoryEntry } from "@byok/store";
import { chatItemsFromHistory } from "./history.js";
import { estimateTokens } from "./metering.js";

const DEFAULT_INSTRUCTIONS =
  "You are a helpful coding assistant working inside the user's editor. Answer clearly and concisely.";

const SUMMARIZE_INSTRUCTIONS =
  "You write the summary that replaces an agent conversation's earlier history. Keep what is needed to continue the work: " +
  "the user's goals, decisions made, files and commands involved, results, and open tasks. Be concise and factual.";
const SUMMARIZE_PROMPT = "Summarize the conversation so far for continuing it later.";

/** A pass estimated above this share of the model's context window is preceded by compaction. */
const COMPACTION_THRESHOLD = 0.8;

/** What the next provider pass is, decided from the run's state and its stored history. */
export type PassRequest =
  | { kind: "call"; instructions: string; items: ChatItem[]; tools: ToolSpec[] }
  /** A resume with nothing stored to resume. */
  | { kind: "nothing_to_resume" }
  /** The pass would not fit: compact history before `coversBeforeSeq` first. */
  | { kind: "compact"; coversBeforeSeq: number; estimate: number; window: number };

/**
 * Builds the next pass: a summary pass (summarize action or compaction in progress: summary
 * instructions, no tools), or the run's pass with the tools of its mode. Pure.
 */
export function passRequest(
  state: RunState,
  history: readonly HistoryEntry[],
  opts: { attempt: number; contextWindow: number | undefined; defaultInstructions: string | undefined; nowMs: number },
): PassRequest {
  const run = state.run!;
  const compacting = state.compacting;
  const covered = compacting?.coversBeforeSeq;
  const items = chatItemsFromHistory(covered === undefined ? history : history.filter((e) => e.seq < covered));
  if (run.kind === "resume" && items.length === 0) return { kind: "nothing_to_resume" };
  if (run.kind === "summarize" || compacting) {
    const guidance = compacting?.hookMessage ? `\n\nGuidance from the user's pre-compaction hook: ${compacting.hookMessage}` : "";
    return { kind: "call", instructions: SUMMARIZE_INSTRUCTIONS, items: [...items, { role: "user", text: SUMMARIZE_PROMPT + guidance }], tools: [] };
  }
  const tools = toolsFor(toolContextOf(state, opts.nowMs));
  if (opts.attempt === 1 && !state.compactedInTurn) {
    // Near the context window: compact the history before the current turn first (once a turn).
    const window = opts.contextWindow ?? DEFAULT_CONTEXT_WINDOW;
    const estimate = estimateTokens(JSON.stringify(items).length + JSON.stringify(tools).length);
    const lastUser = history.findLast((e) => e.kind === "user" && !e.interrupted);
    if (estimate > COMPACTION_THRESHOLD * window && lastUser && history.some((e) => e.seq < lastUser.seq && e.kind !== "summary")) {
      return { kind: "compact", coversBeforeSeq: lastUser.seq, estimate, window };
    }
  }
  return { kind: "call", instructions: run.customSystemPrompt || opts.defaultInstructions || DEFAULT_INSTRUCTIONS, items, tools };
}
