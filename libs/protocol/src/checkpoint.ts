import { clone, create, toBinary } from "@bufbuild/protobuf";
import {
  AgentConversationTurnStructureSchema, ConversationStateStructureSchema, ConversationStepSchema,
  ConversationTokenDetailsSchema, ConversationTurnStructureSchema, UserMessageSchema,
  type AgentMode, type ConversationStateStructure,
} from "@byok/wire";

/** The current turn as the checkpoint shows it. */
export interface TurnView {
  requestId: string;
  userText: string;
  messageId: string;
  mode: AgentMode;
  /** Steps so far, in order. */
  steps: ({ kind: "thinking"; text: string; durationMs: number } | { kind: "assistant"; text: string })[];
}

/**
 * Builds the checkpoint after `base` (the client's conversation_state) plus the current turn.
 * Turns, user message and steps are inline protobuf bytes (PROTOCOL.md "Checkpoint layout":
 * a turn may be a 32-byte blob id or inline bytes); the agent-loop issue moves them to KV blobs.
 */
export function buildCheckpoint(
  base: ConversationStateStructure | undefined,
  turn: TurnView,
  usedTokens: number,
  maxTokens: number,
): ConversationStateStructure {
  const userMessage = toBinary(
    UserMessageSchema,
    create(UserMessageSchema, { text: turn.userText, messageId: turn.messageId, mode: turn.mode }),
  );
  const steps = turn.steps.map((s) =>
    toBinary(
      ConversationStepSchema,
      create(ConversationStepSchema, {
        message:
          s.kind === "thinking"
            ? { case: "thinkingMessage", value: { $typeName: "agent.v1.ThinkingMessage", text: s.text, durationMs: Math.round(s.durationMs) } }
            : { case: "assistantMessage", value: { $typeName: "agent.v1.AssistantMessage", text: s.text } },
      }),
    ),
  );
  const turnBytes = toBinary(
    ConversationTurnStructureSchema,
    create(ConversationTurnStructureSchema, {
      turn: {
        case: "agentConversationTurn",
        value: create(AgentConversationTurnStructureSchema, { userMessage, steps, requestId: turn.requestId }),
      },
    }),
  );
  const state = base ? clone(ConversationStateStructureSchema, base) : create(ConversationStateStructureSchema, {});
  state.turns = [...(base?.turns ?? []), turnBytes];
  state.mode = turn.mode;
  state.tokenDetails = create(ConversationTokenDetailsSchema, { usedTokens, maxTokens });
  return state;
}
