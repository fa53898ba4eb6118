import { estimateInputTokens } from "@byok/providers";
import { DEFAULT_CONTEXT_WINDOW, toolContextOf, toolsFor, type RunState, type ChatItem, type ToolSpec } from "@byok/protocol";
import type { HistoryEntry } from "@byok/store";
import { chatItemsFromHistory } from "./history.js";

const DEFAULT_INSTRUCTIONS =
  "You are a helpful coding assistant working inside the user's editor. Answer clearly and concisely.";

const SUMMARIZE_INSTRUCTIONS =
  "You write the summary that replaces an agent conversation's earlier history. Keep what is needed to continue the work: " +
  "the user's goals, decisions made, files and commands involved, results, and open tasks. Be concise and factual.";
const SUMMARIZE_PROMPT = "Summarize the conversation so far for continuing it later.";

/** A pass estimated above this share of the model's context window is preceded by compaction. */
const COMPACTION_THRESHOLD = 0.8;
/** After a provider's context-length refusal, the recent tail kept verbatim fits this share of the window. */
const TAIL_SHARE = 0.5;
/** A summary pass reads at most this share of the window of older history (the oldest is left out first). */
const SUMMARY_INPUT_SHARE = 0.8;

/** What the next provider pass is, decided from the run's state and its stored history. */
export type PassRequest =
  | { kind: "call"; instructions: string; items: ChatItem[]; tools: ToolSpec[]; inputTokens: number }
  /** A resume with nothing stored to resume. */
  | { kind: "nothing_to_resume" }
  /** The pass would not fit: compact history before `coversBeforeSeq` first. */
  | { kind: "compact"; coversBeforeSeq: number; estimate: number; window: number };

export interface PassOptions {
  attempt: number;
  /** The target's context window (route config); DEFAULT_CONTEXT_WINDOW when absent. */
  contextWindow: number | undefined;
  /** Upstream model name: picks the token estimator. */
  model: string;
  defaultInstructions: string | undefined;
  nowMs: number;
}

/**
 * Builds the next pass: a summary pass (summarize action or compaction in progress: summary
 * instructions, no tools), or the run's pass with the tools of its mode. Pure.
 */
export function passRequest(state: RunState, history: readonly HistoryEntry[], opts: PassOptions): PassRequest {
  const run = state.run!;
  const compacting = state.compacting;
  const covered = compacting?.coversBeforeSeq;
  const items = chatItemsFromHistory(covered === undefined ? history : history.filter((e) => e.seq < covered));
  if (run.kind === "resume" && items.length === 0) return { kind: "nothing_to_resume" };
  const window = compacting?.window ?? opts.contextWindow ?? DEFAULT_CONTEXT_WINDOW;
  if (run.kind === "summarize" || compacting) {
    const guidance = compacting?.hookMessage ? `\n\nGuidance from the user's pre-compaction hook: ${compacting.hookMessage}` : "";
    const prompt: ChatItem = { role: "user", text: SUMMARIZE_PROMPT + guidance };
    const older = newestThatFit(items, SUMMARY_INPUT_SHARE * window, opts.model);
    const all = [...older, prompt];
    return { kind: "call", instructions: SUMMARIZE_INSTRUCTIONS, items: all, tools: [], inputTokens: estimateInputTokens({ instructions: SUMMARIZE_INSTRUCTIONS, items: all, tools: [] }, opts.model) };
  }
  const tools = toolsFor(toolContextOf(state, opts.nowMs));
  const instructions = run.customSystemPrompt || opts.defaultInstructions || DEFAULT_INSTRUCTIONS;
  const inputTokens = estimateInputTokens({ instructions, items, tools }, opts.model);
  if (opts.attempt === 1 && !state.compactedInTurn) {
    // Near the context window: compact the history before the current turn first (once a turn).
    const lastUser = history.findLast((e) => e.kind === "user" && !e.interrupted);
    if (inputTokens > COMPACTION_THRESHOLD * window && lastUser && history.some((e) => e.seq < lastUser.seq && e.kind !== "summary")) {
      return { kind: "compact", coversBeforeSeq: lastUser.seq, estimate: inputTokens, window };
    }
  }
  return { kind: "call", instructions, items, tools, inputTokens };
}

/**
 * Where to cut history when the provider refused a pass as too long for its context window:
 * the most recent entries that fit TAIL_SHARE of `window` stay verbatim (never starting with
 * a tool result, whose call would be summarized away), everything before is summarized.
 * Undefined when there is nothing before the tail to summarize, or when the latest entry alone
 * does not fit the tail's share. Pure.
 */
export function overflowCut(history: readonly HistoryEntry[], window: number, model: string): number | undefined {
  const durable = history.filter((e) => !e.interrupted && e.kind !== "summary");
  let budget = TAIL_SHARE * window;
  let cut = durable.length;
  while (cut > 0) {
    const cost = estimateInputTokens({ instructions: "", items: chatItemsFromHistory([durable[cut - 1]!]), tools: [] }, model);
    if (cost > budget) break;
    budget -= cost;
    cut--;
  }
  while (cut < durable.length && durable[cut]!.kind === "tool") cut++;
  // Nothing older to summarize, or even the latest entry alone is too large: compaction cannot help.
  if (cut === 0 || cut === durable.length) return undefined;
  return durable[cut]!.seq;
}

/** The newest items that fit `budget` tokens, in order (the oldest are left out first). */
function newestThatFit(items: readonly ChatItem[], budget: number, model: string): ChatItem[] {
  let left = budget;
  let from = items.length;
  while (from > 0) {
    const cost = estimateInputTokens({ instructions: "", items: [items[from - 1]!], tools: [] }, model);
    if (cost > left) break;
    left -= cost;
    from--;
  }
  return items.slice(from);
}
