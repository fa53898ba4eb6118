import type {
  AgentClientMessage, AgentRunRequest, ConversationAction, ExecClientControlMessage, ExecClientMessage,
  InteractionResponse, KvClientMessage, PrewarmRequest,
} from "@byok/wire";

/** The name of a ConversationAction branch, or "none". */
export type ActionKind = NonNullable<ConversationAction["action"]["case"]> | "none";

/** One client message, classified into the branch the run engine acts on. */
export type ClientEvent =
  | {
      kind: "run_request";
      request: AgentRunRequest;
      action: ActionKind;
      /** A prewarm of the same conversation on another request id, taken for this run (engine-attached). */
      sharedPrewarm?: PrewarmRequest;
    }
  | { kind: "prewarm_request"; request: PrewarmRequest }
  | { kind: "conversation_action"; action: ConversationAction; actionKind: ActionKind }
  | { kind: "exec_client_message"; message: ExecClientMessage }
  | { kind: "exec_client_control_message"; message: ExecClientControlMessage }
  | { kind: "kv_client_message"; message: KvClientMessage }
  | { kind: "interaction_response"; message: InteractionResponse }
  | { kind: "client_heartbeat" }
  /** No known branch: a newer client's message carried as unknown fields. Accepted, logged once. */
  | { kind: "unknown"; unknownFieldNumbers: number[] };

export function actionKind(a: ConversationAction | undefined): ActionKind {
  return a?.action.case ?? "none";
}

/** Classifies all 8 AgentClientMessage branches. Pure. */
export function classifyClientMessage(msg: AgentClientMessage): ClientEvent {
  const m = msg.message;
  switch (m.case) {
    case "runRequest":
      return { kind: "run_request", request: m.value, action: actionKind(m.value.action) };
    case "prewarmRequest":
      return { kind: "prewarm_request", request: m.value };
    case "conversationAction":
      return { kind: "conversation_action", action: m.value, actionKind: actionKind(m.value) };
    case "execClientMessage":
      return { kind: "exec_client_message", message: m.value };
    case "execClientControlMessage":
      return { kind: "exec_client_control_message", message: m.value };
    case "kvClientMessage":
      return { kind: "kv_client_message", message: m.value };
    case "interactionResponse":
      return { kind: "interaction_response", message: m.value };
    case "clientHeartbeat":
      return { kind: "client_heartbeat" };
    case undefined:
      return { kind: "unknown", unknownFieldNumbers: (msg.$unknown ?? []).map((u) => u.no) };
  }
}
