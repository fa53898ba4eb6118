import { hash } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import {
  AgentConversationTurnStructureSchema, ConversationStepSchema, ConversationTurnStructureSchema, UserMessageSchema,
  type AgentMode, type ConversationStep,
} from "@byok/wire";

/**
 * Content-addressed conversation blobs (docs/protocol.md "Checkpoint layout"): id = SHA-256 of the
 * blob's serialized bytes (32 raw bytes). Pure computation, no I/O.
 */
export function blobId(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(hash("sha256", bytes, "buffer"));
}

export function blobKey(id: Uint8Array): string {
  return Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString("hex");
}

export interface Blob {
  id: Uint8Array;
  data: Uint8Array;
}

export interface TurnBlobs {
  /** Blob id of the ConversationTurnStructure: what `ConversationStateStructure.turns[]` holds. */
  turnId: Uint8Array;
  /** Every blob of the turn (user message, steps, the turn itself), children first. */
  blobs: Blob[];
}

function blob(data: Uint8Array): Blob {
  return { id: blobId(data), data };
}

const stepBlobs = new WeakMap<ConversationStep["message"], Blob>();

/**
 * A turn step's serialized ConversationStep and blob id, computed once per step. A run's steps
 * only grow, each step object is never changed once in the run state (the machine builds new
 * ones), and every checkpoint and snapshot of the turn carries all of them: serializing and
 * hashing them anew each time made a turn's checkpoints and snapshots quadratic in its length
 * (docs/benchmarks.md "Steps serialized once, saved as bytes"). Held as long as the step object is; callers
 * must not write into `data`.
 */
export function stepBlob(message: ConversationStep["message"]): Blob {
  let b = stepBlobs.get(message);
  if (b === undefined) {
    b = blob(toBinary(ConversationStepSchema, create(ConversationStepSchema, { message })));
    stepBlobs.set(message, b);
  }
  return b;
}

/**
 * Blobs of one agent turn: the UserMessage, each ConversationStep, and the
 * AgentConversationTurnStructure referencing them by id.
 */
export function buildTurnBlobs(turn: {
  requestId: string;
  userText: string;
  messageId: string;
  mode: AgentMode;
  steps: ConversationStep["message"][];
}): TurnBlobs {
  const user = blob(toBinary(UserMessageSchema, create(UserMessageSchema, { text: turn.userText, messageId: turn.messageId, mode: turn.mode })));
  const steps = turn.steps.map(stepBlob);
  const t = blob(
    toBinary(
      ConversationTurnStructureSchema,
      create(ConversationTurnStructureSchema, {
        turn: {
          case: "agentConversationTurn",
          value: create(AgentConversationTurnStructureSchema, {
            userMessage: user.id,
            steps: steps.map((s) => s.id),
            requestId: turn.requestId,
          }),
        },
      }),
    ),
  );
  return { turnId: t.id, blobs: [user, ...steps, t] };
}
