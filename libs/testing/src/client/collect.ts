import type { AgentServerMessage, ConversationStateStructure, EndStream, TurnEndedUpdate } from "@byok/wire";
import { StreamTruncatedError, type StreamItem } from "./frames.js";

/** What one RunSSE connection delivered, read to its end. */
export interface CollectResult {
  /** Every non-heartbeat AgentServerMessage, in stream order. */
  messages: AgentServerMessage[];
  /** The end-stream status; undefined when the body closed without one (`truncated`). */
  end: EndStream | undefined;
  /** The body closed without an end-stream frame (never a success). */
  truncated: boolean;
  /** Concatenation of every `interaction_update.text_delta.text`. */
  textDeltas: string;
  turnEnded?: TurnEndedUpdate;
  /** Number of `conversation_checkpoint_update` frames. */
  checkpoints: number;
  lastCheckpoint?: ConversationStateStructure;
  /** Number of `interaction_update.heartbeat` frames (not in `messages`). */
  heartbeats: number;
}

export function isHeartbeat(m: AgentServerMessage): boolean {
  return m.message.case === "interactionUpdate" && m.message.value.message.case === "heartbeat";
}

/**
 * Folds a RunSSE item stream into a CollectResult. `onMessage` sees each non-heartbeat message
 * before the next item is read. A {@link StreamTruncatedError} ends the fold with `truncated`;
 * every other error propagates.
 */
export async function collectItems(
  items: AsyncIterable<StreamItem>,
  onMessage?: (m: AgentServerMessage) => void | Promise<void>,
): Promise<CollectResult> {
  const r: CollectResult = { messages: [], end: undefined, truncated: false, textDeltas: "", checkpoints: 0, heartbeats: 0 };
  try {
    for await (const item of items) {
      if (item.kind === "end") {
        r.end = item.end;
        continue;
      }
      const m = item.message;
      if (isHeartbeat(m)) {
        r.heartbeats++;
        continue;
      }
      r.messages.push(m);
      if (m.message.case === "conversationCheckpointUpdate") {
        r.checkpoints++;
        r.lastCheckpoint = m.message.value;
      } else if (m.message.case === "interactionUpdate") {
        const u = m.message.value.message;
        if (u.case === "textDelta") r.textDeltas += u.value.text;
        else if (u.case === "turnEnded") r.turnEnded = u.value;
      }
      if (onMessage) await onMessage(m);
    }
  } catch (err) {
    if (!(err instanceof StreamTruncatedError)) throw err;
    r.truncated = true;
  }
  return r;
}
