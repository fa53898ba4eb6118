import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  AgentClientMessageSchema,
  AgentMode,
  ConversationActionSchema,
  ConversationStateStructureSchema,
  ExecClientMessageSchema,
  InteractionResponseSchema,
  RequestedModelSchema,
  type AgentClientMessage,
} from "@byok/wire";

/** Pure builders of the AgentClientMessages a Cursor client sends. No I/O, no randomness unless an id is omitted. */

/** Client-supplied provider credentials (`RequestedModel.credentials`). */
export type ClientCredentials =
  | { apiKey: string; baseUrl?: string }
  | { azure: { apiKey: string; baseUrl: string; deployment: string } }
  | { bedrock: { accessKey: string; secretKey: string; region: string; sessionToken?: string } };

export interface RunRequestInit {
  text: string;
  conversationId: string;
  modelId: string;
  /** Default: a fresh UUID. */
  runId?: string;
  /** Default: a fresh UUID. */
  messageId?: string;
  /** Default `AgentMode.AGENT`. */
  mode?: AgentMode;
  /** Omitted: the gateway serves the model from its own route table (docs/protocol.md "Client calls"). */
  credentials?: ClientCredentials;
  /** `RequestedModel.parameters`, e.g. `{ thinking_effort: "high" }`. */
  parameters?: Record<string, string>;
  /**
   * The client's checkpoint. Default: none at all, i.e. a client that keeps no state (the
   * gateway continues from the conversation's stored checkpoint). `{}` is a state with zero
   * turns: a new conversation, or one restored to its very beginning.
   */
  conversationState?: MessageInitShape<typeof ConversationStateStructureSchema>;
}

type CredentialsInit = MessageInitShape<typeof RequestedModelSchema>["credentials"];

function credentialsInit(c: ClientCredentials | undefined): CredentialsInit {
  if (!c) return { case: undefined };
  if ("azure" in c) return { case: "azureCredentials", value: c.azure };
  if ("bedrock" in c) return { case: "bedrockCredentials", value: c.bedrock };
  return { case: "apiKeyCredentials", value: c.baseUrl === undefined ? { apiKey: c.apiKey } : { apiKey: c.apiKey, baseUrl: c.baseUrl } };
}

/**
 * `AgentClientMessage{run_request{action{user_message_action{user_message{text, message_id, mode}}},
 * conversation_state, mcp_tools (empty), conversation_id, run_id, requested_model{model_id, parameters, credentials?}}}`.
 */
export function runRequestMessage(init: RunRequestInit): AgentClientMessage {
  return create(AgentClientMessageSchema, {
    message: {
      case: "runRequest",
      value: {
        ...(init.conversationState ? { conversationState: init.conversationState } : {}),
        action: {
          action: {
            case: "userMessageAction",
            value: { userMessage: { text: init.text, messageId: init.messageId ?? crypto.randomUUID(), mode: init.mode ?? AgentMode.AGENT } },
          },
        },
        mcpTools: {},
        conversationId: init.conversationId,
        runId: init.runId ?? crypto.randomUUID(),
        requestedModel: {
          modelId: init.modelId,
          parameters: Object.entries(init.parameters ?? {}).map(([id, value]) => ({ id, value })),
          credentials: credentialsInit(init.credentials),
        },
      },
    },
  });
}

/** `AgentClientMessage{client_heartbeat{}}`. */
export function heartbeatMessage(): AgentClientMessage {
  return create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } });
}

/** A top-level `conversation_action` (acts on the live run of the request; supersedes nothing). */
export function conversationActionMessage(action: MessageInitShape<typeof ConversationActionSchema>): AgentClientMessage {
  return create(AgentClientMessageSchema, { message: { case: "conversationAction", value: action } });
}

/** `conversation_action{cancel_action{reason}}`. */
export function cancelMessage(reason = ""): AgentClientMessage {
  return conversationActionMessage({ action: { case: "cancelAction", value: { reason } } });
}

/** The result branch of an `ExecClientMessage`, e.g. `{ case: "readResult", value: {...} }`. */
export type ExecResultInit = MessageInitShape<typeof ExecClientMessageSchema>["message"];

/** `exec_client_message{id, exec_id, <branch>_result}` answering the server's `exec_server_message{id, exec_id}`. */
export function execResultMessage(init: { id: number; execId: string; result: ExecResultInit }): AgentClientMessage {
  return create(AgentClientMessageSchema, {
    message: { case: "execClientMessage", value: { id: init.id, execId: init.execId, message: init.result } },
  });
}

/** `exec_client_control_message{stream_close{id}}`: for a non-streaming exec only a transport ack. */
export function execStreamCloseMessage(id: number): AgentClientMessage {
  return create(AgentClientMessageSchema, { message: { case: "execClientControlMessage", value: { message: { case: "streamClose", value: { id } } } } });
}

/** `exec_client_control_message{throw{id, error}}`: the exec failed terminally on the client. */
export function execThrowMessage(id: number, error: string): AgentClientMessage {
  return create(AgentClientMessageSchema, { message: { case: "execClientControlMessage", value: { message: { case: "throw", value: { id, error } } } } });
}

/** The result branch of an `InteractionResponse`, e.g. `{ case: "askQuestionInteractionResponse", value: {...} }`. */
export type InteractionResultInit = MessageInitShape<typeof InteractionResponseSchema>["result"];

/** `interaction_response{id, <result>}` answering `interaction_query{id}`. */
export function interactionResponseMessage(init: { id: number; result: InteractionResultInit }): AgentClientMessage {
  return create(AgentClientMessageSchema, { message: { case: "interactionResponse", value: { id: init.id, result: init.result } } });
}

/** `kv_client_message{id, set_blob_result{}}` acknowledging `kv_server_message{id, set_blob_args}`. */
export function kvSetBlobResultMessage(id: number): AgentClientMessage {
  return create(AgentClientMessageSchema, { message: { case: "kvClientMessage", value: { id, message: { case: "setBlobResult", value: {} } } } });
}

/** `kv_client_message{id, get_blob_result{blob_data}}` answering `get_blob_args`. */
export function kvGetBlobResultMessage(id: number, blobData?: Uint8Array): AgentClientMessage {
  return create(AgentClientMessageSchema, {
    message: { case: "kvClientMessage", value: { id, message: { case: "getBlobResult", value: blobData ? { blobData } : {} } } },
  });
}
