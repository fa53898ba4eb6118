import { fromBinary } from "@bufbuild/protobuf";
import { ConversationStepSchema, ConversationTurnStructureSchema, UserMessageSchema } from "@byok/wire";
import { blobId, blobKey } from "./blobs.js";
import type { HistoryRecord } from "./run-types.js";

/**
 * Import of a conversation the client holds (started elsewhere): its checkpoint references
 * turns, user messages and steps as 32-byte blob ids (or inline bytes). Pure helpers: which
 * blobs are still missing, and the history the resolved turns give.
 */
export type BlobStore = ReadonlyMap<string, Uint8Array>;

/** Keeps only blobs whose bytes hash to their id (docs/protocol.md: verify SHA-256 before trusting). */
export function verifiedBlobs(blobs: readonly { id: Uint8Array; value: Uint8Array }[]): { have: Map<string, Uint8Array>; rejected: number } {
  const have = new Map<string, Uint8Array>();
  let rejected = 0;
  for (const b of blobs) {
    if (b.id.byteLength === 32 && blobKey(blobId(b.value)) === blobKey(b.id)) have.set(blobKey(b.id), b.value);
    else rejected++;
  }
  return { have, rejected };
}

/** A reference is a 32-byte blob id, anything else is the inline bytes themselves. */
function deref(ref: Uint8Array, have: BlobStore): Uint8Array | undefined {
  return ref.byteLength === 32 ? have.get(blobKey(ref)) : ref;
}

function parse<T>(f: () => T): T | undefined {
  try {
    return f();
  } catch {
    return undefined;
  }
}

/** Blob ids still needed to read every turn (turns first, then what resolved turns reference). */
export function missingBlobs(turns: readonly Uint8Array[], have: BlobStore): Uint8Array[] {
  const out = new Map<string, Uint8Array>();
  const need = (ref: Uint8Array) => {
    if (ref.byteLength === 32 && !have.has(blobKey(ref))) out.set(blobKey(ref), ref);
  };
  for (const t of turns) {
    need(t);
    const bytes = deref(t, have);
    const turn = bytes && parse(() => fromBinary(ConversationTurnStructureSchema, bytes));
    if (turn?.turn.case !== "agentConversationTurn") continue;
    need(turn.turn.value.userMessage);
    for (const st of turn.turn.value.steps) need(st);
  }
  return [...out.values()];
}

/** The history the client's turns give: user messages and assistant text, marked imported. */
export function importedHistory(turns: readonly Uint8Array[], have: BlobStore): HistoryRecord[] {
  const out: HistoryRecord[] = [];
  for (const t of turns) {
    const bytes = deref(t, have);
    const turn = bytes && parse(() => fromBinary(ConversationTurnStructureSchema, bytes));
    if (turn?.turn.case !== "agentConversationTurn") continue;
    const um = deref(turn.turn.value.userMessage, have);
    const user = um && parse(() => fromBinary(UserMessageSchema, um));
    if (user?.text) out.push({ kind: "user", body: { text: user.text, messageId: user.messageId, imported: true }, interrupted: false });
    const texts: string[] = [];
    for (const ref of turn.turn.value.steps) {
      const sb = deref(ref, have);
      const st = sb && parse(() => fromBinary(ConversationStepSchema, sb));
      if (st?.message.case === "assistantMessage" && st.message.value.text) texts.push(st.message.value.text);
    }
    if (texts.length) out.push({ kind: "assistant", body: { text: texts.join("\n\n"), imported: true, modelCallId: `import-${out.length}` }, interrupted: false });
  }
  return out;
}

/**
 * The request id of each turn the client's conversation_state lists, in order (undefined for a
 * turn whose bytes are not at hand or that is not an agent turn). The stored history of those
 * requests is what the client's conversation holds (docs/architecture.md "History").
 */
export function turnRequestIds(turns: readonly Uint8Array[], have: BlobStore): (string | undefined)[] {
  return turns.map((t) => {
    const bytes = deref(t, have);
    const turn = bytes && parse(() => fromBinary(ConversationTurnStructureSchema, bytes));
    return turn?.turn.case === "agentConversationTurn" && turn.turn.value.requestId ? turn.turn.value.requestId : undefined;
  });
}
