import { create, toBinary } from "@bufbuild/protobuf";
import {
  AgentServerMessageSchema, ContextInjectionStateSchema, ConversationStateStructureSchema, ExecServerControlMessageSchema, ExecServerMessageSchema,
  InteractionQuerySchema, InteractionUpdateSchema,
  type AgentServerMessage, type ConversationStateStructure, type ExecServerMessage, type InteractionQuery,
  type InteractionUpdate, type ToolCall,
} from "@byok/wire";
import type { Usage } from "./model/index.js";

/** Builders of the AgentServerMessage frames the gateway sends. Pure. */
function update(message: InteractionUpdate["message"]): AgentServerMessage {
  return create(AgentServerMessageSchema, {
    message: { case: "interactionUpdate", value: create(InteractionUpdateSchema, { message }) },
  });
}

export const frames = {
  textDelta(text: string, isServerNotice = false): AgentServerMessage {
    return update({ case: "textDelta", value: { $typeName: "agent.v1.TextDeltaUpdate", text, isServerNotice } });
  },
  thinkingDelta(text: string): AgentServerMessage {
    return update({ case: "thinkingDelta", value: { $typeName: "agent.v1.ThinkingDeltaUpdate", text } });
  },
  thinkingCompleted(durationMs: number): AgentServerMessage {
    return update({
      case: "thinkingCompleted",
      value: { $typeName: "agent.v1.ThinkingCompletedUpdate", thinkingDurationMs: Math.max(0, Math.round(durationMs)) },
    });
  },
  partialToolCall(callId: string, modelCallId: string, argsTextDelta: string): AgentServerMessage {
    return update({
      case: "partialToolCall",
      value: { $typeName: "agent.v1.PartialToolCallUpdate", callId, modelCallId, argsTextDelta },
    });
  },
  toolCallStarted(callId: string, modelCallId: string, toolCall: ToolCall): AgentServerMessage {
    return update({ case: "toolCallStarted", value: { $typeName: "agent.v1.ToolCallStartedUpdate", callId, modelCallId, toolCall } });
  },
  toolCallCompleted(callId: string, modelCallId: string, toolCall: ToolCall): AgentServerMessage {
    return update({ case: "toolCallCompleted", value: { $typeName: "agent.v1.ToolCallCompletedUpdate", callId, modelCallId, toolCall } });
  },
  interactionUpdate(message: InteractionUpdate["message"]): AgentServerMessage {
    return update(message);
  },
  exec(id: number, execId: string, message: ExecServerMessage["message"]): AgentServerMessage {
    return create(AgentServerMessageSchema, {
      message: { case: "execServerMessage", value: create(ExecServerMessageSchema, { id, execId, message }) },
    });
  },
  execAbort(id: number): AgentServerMessage {
    return create(AgentServerMessageSchema, {
      message: {
        case: "execServerControlMessage",
        value: create(ExecServerControlMessageSchema, { message: { case: "abort", value: { $typeName: "agent.v1.ExecServerAbort", id } } }),
      },
    });
  },
  interactionQuery(id: number, query: InteractionQuery["query"]): AgentServerMessage {
    return create(AgentServerMessageSchema, {
      message: { case: "interactionQuery", value: create(InteractionQuerySchema, { id, query }) },
    });
  },
  summaryStarted(): AgentServerMessage {
    return update({ case: "summaryStarted", value: { $typeName: "agent.v1.SummaryStartedUpdate" } });
  },
  summary(summary: string): AgentServerMessage {
    return update({ case: "summary", value: { $typeName: "agent.v1.SummaryUpdate", summary } });
  },
  summaryCompleted(hookMessage?: string): AgentServerMessage {
    return update({ case: "summaryCompleted", value: { $typeName: "agent.v1.SummaryCompletedUpdate", ...(hookMessage ? { hookMessage } : {}) } });
  },
  contextInjection(injectionId: string, state: "queued" | "delivered" | "rejected", detail: { reason?: string; step?: number; nowMs?: number } = {}): AgentServerMessage {
    const s = create(ContextInjectionStateSchema, {
      state:
        state === "queued"
          ? { case: "queued", value: {} }
          : state === "delivered"
            ? { case: "delivered", value: { step: detail.step ?? 0, deliveryBatchId: injectionId, deliveredAtMs: BigInt(detail.nowMs ?? 0) } }
            : { case: "rejected", value: { reason: detail.reason ?? "" } },
    });
    return update({ case: "contextInjectionState", value: { $typeName: "agent.v1.ContextInjectionStateUpdate", injectionId, state: s } });
  },
  heartbeat(): AgentServerMessage {
    return update({ case: "heartbeat", value: { $typeName: "agent.v1.HeartbeatUpdate" } });
  },
  turnEnded(u: Usage): AgentServerMessage {
    return update({
      case: "turnEnded",
      value: {
        $typeName: "agent.v1.TurnEndedUpdate",
        inputTokens: BigInt(u.inputTokens),
        outputTokens: BigInt(u.outputTokens),
        cacheReadTokens: BigInt(u.cacheReadTokens),
        cacheWriteTokens: BigInt(u.cacheWriteTokens),
        reasoningTokens: BigInt(u.reasoningTokens),
      },
    });
  },
  checkpoint(state: ConversationStateStructure): AgentServerMessage {
    return create(AgentServerMessageSchema, { message: { case: "conversationCheckpointUpdate", value: state } });
  },
};

/** Merge key of a streamed delta frame (text by notice flag, thinking); undefined for other frames. */
function deltaKey(f: AgentServerMessage): string | undefined {
  if (f.message.case !== "interactionUpdate") return undefined;
  const u = f.message.value.message;
  if (u.case === "textDelta") return u.value.isServerNotice ? "notice" : "text";
  if (u.case === "thinkingDelta") return "thinking";
  return undefined;
}

/** A model text or thinking delta (not a server notice): what delta coalescing may hold back. */
export function isCoalescableDelta(f: AgentServerMessage): boolean {
  const k = deltaKey(f);
  return k === "text" || k === "thinking";
}

/**
 * Consecutive text deltas (with the same notice flag) become one text delta, consecutive
 * thinking deltas one thinking delta; every other frame stays where it is, so nothing is
 * reordered. Lossless: the client concatenates delta texts (docs/benchmarks.md "Delta coalescing").
 */
export function coalesceDeltas(fs: readonly AgentServerMessage[]): AgentServerMessage[] {
  const out: AgentServerMessage[] = [];
  let runKey: string | undefined;
  let first: AgentServerMessage | undefined;
  let texts: string[] = [];
  const close = () => {
    if (runKey === undefined) return;
    const text = texts.join("");
    out.push(texts.length === 1 ? first! : runKey === "thinking" ? frames.thinkingDelta(text) : frames.textDelta(text, runKey === "notice"));
    runKey = undefined;
    texts = [];
  };
  for (const f of fs) {
    const k = deltaKey(f);
    if (k !== runKey) close();
    if (k === undefined) {
      out.push(f);
      continue;
    }
    if (runKey === undefined) first = f;
    runKey = k;
    const u = (f.message.value as InteractionUpdate).message;
    texts.push((u.value as { text: string }).text);
  }
  close();
  return out;
}

export function encodeServerMessage(m: AgentServerMessage): Uint8Array {
  return toBinary(AgentServerMessageSchema, m);
}

/** The heartbeat frame's bytes, built once: the ingress sends it on silence, never stores it. */
export const HEARTBEAT_FRAME: Uint8Array = encodeServerMessage(frames.heartbeat());

export function emptyConversationState(): ConversationStateStructure {
  return create(ConversationStateStructureSchema, {});
}
