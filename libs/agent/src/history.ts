import type { ChatItem, ReasoningPart, ToolCallPart } from "@byok/protocol";
import type { HistoryEntry } from "@byok/store";

/** Which requests' stored history a run may use: the client's turns, and the run itself. */
export interface ClientTurns {
  /** Request ids of the turns the client's conversation_state lists (resolved from their blobs). */
  readonly requestIds: ReadonlySet<string>;
  readonly current: { requestId: string; generation: number };
}

/**
 * The stored history of the turns the client's conversation still has (docs/architecture.md
 * "History"): entries of requests its conversation_state lists, and the current run's own.
 * A restored checkpoint or an edited message leaves the discarded turns out, a state with zero
 * turns all of them; `undefined` (a run_request with no conversation_state and no stored
 * checkpoint to continue from) keeps the stored conversation as it is.
 */
export function historyOfClientTurns(entries: readonly HistoryEntry[], turns: ClientTurns | undefined): HistoryEntry[] {
  if (!turns) return [...entries];
  const { requestIds, current } = turns;
  return entries.filter((e) => requestIds.has(e.requestId) || (e.requestId === current.requestId && e.generation === current.generation));
}

/**
 * Provider-neutral conversation from stored history. Entries marked interrupted (output of a
 * cut pass the client saw) are left out: the re-run starts from the last durable point.
 */
export function chatItemsFromHistory(entries: readonly HistoryEntry[]): ChatItem[] {
  const items: ChatItem[] = [];
  // A summary replaces the history it covers: everything before it, or (automatic compaction)
  // everything before `coversBeforeSeq`, whose tail stays verbatim after the summary.
  let from = -1;
  entries.forEach((e, i) => {
    if (e.kind === "summary" && !e.interrupted) from = i;
  });
  let ordered: readonly HistoryEntry[] = entries;
  if (from >= 0) {
    const summary = entries[from]!;
    const covers = (summary.body as { coversBeforeSeq?: unknown }).coversBeforeSeq;
    const tail = typeof covers === "number" ? entries.filter((e) => e !== summary && e.seq >= covers) : entries.slice(from + 1);
    ordered = [summary, ...tail];
  }
  for (const e of ordered) {
    if (e.interrupted) continue;
    if (e.kind === "summary") {
      items.push({ role: "user", text: `Summary of the conversation so far:\n${String((e.body as { text?: unknown }).text ?? "")}` });
      continue;
    }
    const body = (e.body ?? {}) as Record<string, unknown>;
    if (e.kind === "user") {
      items.push({ role: "user", text: String(body.text ?? "") });
    } else if (e.kind === "assistant") {
      const text = typeof body.text === "string" ? body.text : "";
      const reasoning = Array.isArray(body.reasoning) ? (body.reasoning as ReasoningPart[]) : [];
      const toolCalls = Array.isArray(body.toolCalls) ? (body.toolCalls as ToolCallPart[]) : [];
      items.push({
        role: "assistant",
        ...(text ? { text } : {}),
        ...(reasoning.length ? { reasoning } : {}),
        ...(toolCalls.length ? { toolCalls } : {}),
      });
    } else if (e.kind === "tool") {
      items.push({
        role: "tool",
        toolCallId: String(body.toolCallId ?? ""),
        name: String(body.name ?? ""),
        output: String(body.output ?? ""),
        ...(body.isError === true ? { isError: true } : {}),
      });
    }
  }
  return items;
}
