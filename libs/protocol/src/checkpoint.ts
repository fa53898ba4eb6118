import { clone, create, toBinary } from "@bufbuild/protobuf";
import {
  ConversationPlanSchema, ConversationStateStructureSchema, ConversationSummarySchema, ConversationTokenDetailsSchema, TodoItemSchema,
  type AgentMode, type ConversationStateStructure, type ConversationStep, type TodoItem,
} from "@byok/wire";
import { buildTurnBlobs, type Blob } from "./blobs.js";

/** The current turn as the checkpoint shows it. */
export interface TurnView {
  requestId: string;
  userText: string;
  messageId: string;
  mode: AgentMode;
  /** Steps so far, in order (thinking, assistant text, tool calls). */
  steps: ConversationStep["message"][];
}

/**
 * The checkpoint after `base` (the client's conversation_state) plus the current turn, and the
 * blobs it references (docs/protocol.md "Checkpoint layout"). `pendingToolCalls` lists calls the
 * client still has to answer.
 */
export function buildCheckpoint(
  base: ConversationStateStructure | undefined,
  turn: TurnView,
  tokens: { used: number; max: number },
  pendingToolCalls: readonly string[] = [],
  todos: readonly TodoItem[] = [],
  summary?: string,
  plan?: string,
): { state: ConversationStateStructure; blobs: Blob[] } {
  const t = buildTurnBlobs(turn);
  const state = base ? clone(ConversationStateStructureSchema, base) : create(ConversationStateStructureSchema, {});
  state.turns = [...(base?.turns ?? []), t.turnId];
  state.mode = turn.mode;
  state.pendingToolCalls = [...pendingToolCalls];
  if (todos.length) state.todos = todos.map((t) => toBinary(TodoItemSchema, t));
  if (plan !== undefined) state.plan = toBinary(ConversationPlanSchema, create(ConversationPlanSchema, { plan }));
  if (summary !== undefined) state.summary = toBinary(ConversationSummarySchema, create(ConversationSummarySchema, { summary }));
  state.tokenDetails = create(ConversationTokenDetailsSchema, { usedTokens: tokens.used, maxTokens: tokens.max });
  return { state, blobs: t.blobs };
}
