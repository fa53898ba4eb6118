import type { ChatItem } from "@byok/protocol";

/** What the model reads for a call whose result never reached the gateway. */
export const NO_RESULT_TEXT = "The tool call was interrupted before it returned a result; it may or may not have run.";

/**
 * The conversation in the shape every vendor accepts (docs/architecture.md "History"): each
 * assistant tool call is answered by its tool result before anything else follows, and a tool
 * result answers a call of the assistant turn right before it. Every request builder maps its
 * items through this, so no provider request can carry a call without its result:
 *
 * - a call left unanswered (the run ended while it was pending, history from before results
 *   were always recorded) gets an error result saying so, placed right after the call's turn;
 * - results are moved up to their call's turn when something came in between;
 * - a result with no call before it (or a second result for one call) is dropped.
 *
 * Pure; items are not mutated.
 */
export function answeredItems(items: readonly ChatItem[]): ChatItem[] {
  type ToolItem = Extract<ChatItem, { role: "tool" }>;
  // The first result for each call id, wherever it is; each is placed once, right after its call's turn.
  const resultOf = new Map<string, { at: number; item: ToolItem }>();
  items.forEach((it, at) => {
    if (it.role === "tool" && !resultOf.has(it.toolCallId)) resultOf.set(it.toolCallId, { at, item: it });
  });
  const placed = new Set<string>();
  const out: ChatItem[] = [];
  items.forEach((it, at) => {
    // Results are placed with their call below; a result answering no call is dropped.
    if (it.role === "tool") return;
    out.push(it);
    if (it.role !== "assistant") return;
    for (const c of it.toolCalls ?? []) {
      if (placed.has(c.id)) continue;
      placed.add(c.id);
      const r = resultOf.get(c.id);
      out.push(r && r.at > at ? r.item : { role: "tool", toolCallId: c.id, name: c.name, output: NO_RESULT_TEXT, isError: true });
    }
  });
  return out;
}
