import type {
  AgentMode, AwaitArgs, ExecClientMessage, ExecServerMessage, InteractionQuery, InteractionResponse,
  McpToolDefinition, TodoItem, ToolCall, WebSearchArgs,
} from "@byok/wire";
import type { EditToolInput } from "./specs.js";

/** What the tool layer needs to know about the run. Plain data; the engine builds it per provider pass. */
export interface ToolContext {
  mode: AgentMode;
  /** `AgentRunRequest.mcp_tools.mcp_tools` of the run. */
  mcpTools: readonly McpToolDefinition[];
  isSubagent: boolean;
  /** Policy: a web search backend is configured and allowed. Off → WebSearch is not offered. */
  webSearchEnabled: boolean;
  /** Policy: web fetches are allowed. Off → WebFetch is not offered. */
  webFetchEnabled: boolean;
  /** The conversation's current todos (for TodoWrite with `merge: true`). Default: none. */
  todos?: readonly TodoItem[];
  /** Current time in ms (TodoItem timestamps). The tool layer reads no clock; default 0. */
  nowMs?: number;
}

/** An exec branch with its args: what goes into `exec_server_message.message` (the engine adds id / exec_id). */
export type ExecRequest = Exclude<ExecServerMessage["message"], { case: undefined }>;
/** What the client answered in `exec_client_message.message`. */
export type ExecResult = ExecClientMessage["message"];
/** An interaction query branch: what goes into `interaction_query.query` (the engine adds the id). */
export type InteractionRequest = Exclude<InteractionQuery["query"], { case: undefined }>;
/** What the client answered in `interaction_response.result`. */
export type InteractionResult = InteractionResponse["result"];
/** A populated `ToolCall.tool` branch. */
export type ToolCallVariant = Exclude<ToolCall["tool"], { case: undefined }>;

/** Side effects on conversation state that the engine applies after a tool completes. */
export interface ToolEffects {
  /** The full, updated todo list (TodoWrite): store it in the checkpoint's `todos`. */
  todos?: TodoItem[];
  /** The plan the user accepted (CreatePlan): store it in the checkpoint's `plan`. */
  plan?: { name: string; overview: string; plan: string; uri: string };
  /** The mode the user approved (SwitchMode): later passes use `toolsFor` with this mode. */
  mode?: AgentMode;
}

/**
 * The end of one tool call. Guarantees: `modelText` is never empty and never longer than
 * `MAX_MODEL_TEXT_CHARS` (+ the truncation note); `completed` carries the call's
 * `tool_call_id` and, for known tools, the variant with args and result.
 */
export interface ToolOutcome {
  /** The tool result text the model sees next pass. */
  modelText: string;
  /** True when the tool failed, was rejected, or its arguments were refused. */
  isError: boolean;
  /** The `ToolCall` for `tool_call_completed`. */
  completed: ToolCall;
  effects?: ToolEffects;
}

interface PlanBase {
  /** The model's tool call id (`ToolCallPart.id`); also `tool_call_id` in args and `ToolCall`. */
  callId: string;
  /** The name the model called. */
  toolName: string;
  /** The `ToolCall` (variant with args, no result) for `tool_call_started`. */
  started: ToolCall;
}

/** Send `exec` to the client; complete with `completeExec`, or (streaming) through `applyShellEvent`. */
export interface ExecPlan extends PlanBase {
  kind: "exec";
  exec: ExecRequest;
  /** True for Shell: results arrive as `shell_stream` events (aggregate them with `shell.ts`). */
  streaming: boolean;
}

/** Send `query` to the client; complete with `completeInteraction`. */
export interface InteractionPlan extends PlanBase {
  kind: "interaction";
  query: InteractionRequest;
  /** SwitchMode only: the mode the run was in (for `SwitchModeSuccess.from_mode_id`). */
  fromMode?: string;
}

/** Where a server-composed edit is (edit.ts drives it): read, write, read back. */
export interface EditState {
  readonly callId: string;
  readonly toolName: string;
  readonly input: EditToolInput;
  readonly phase: "reading" | "writing" | "reading_back";
  /** File content before the edit ("" when creating). */
  readonly before: string;
  /** Content written. */
  readonly after: string;
  /** Occurrences replaced. */
  readonly count: number;
  readonly creating: boolean;
}

/** A server-composed string-replace edit: send `exec` (read_args), then drive `continueEdit`. */
export interface EditPlan extends PlanBase {
  kind: "edit";
  state: EditState;
  exec: ExecRequest;
}

/** Resolved without the client (TodoWrite, disabled web tools); emit started + completed directly. */
export interface LocalPlan extends PlanBase {
  kind: "local";
  outcome: ToolOutcome;
}

/**
 * AwaitShell: no exec branch. The engine waits up to `blockUntilMs` for background shell
 * `shellId` to complete, then builds the outcome with `completeAwaitShell`.
 */
export interface AwaitShellPlan extends PlanBase {
  kind: "await_shell";
  shellId: number;
  blockUntilMs: number;
  args: AwaitArgs;
}

/** Unknown tool, tool forbidden in the mode, or invalid arguments: give `outcome` to the model. */
export interface RefusedPlan {
  kind: "refused";
  callId: string;
  toolName: string;
  outcome: ToolOutcome;
}

export type ToolPlan = ExecPlan | InteractionPlan | EditPlan | LocalPlan | AwaitShellPlan | RefusedPlan;

/** What the engine does after an interaction response. */
export type InteractionCompletion =
  /** The tool call is finished. */
  | { kind: "outcome"; outcome: ToolOutcome }
  /** Approved WebFetch: now send this exec (fetch_args) and complete it with `completeExec`. */
  | { kind: "exec"; plan: ExecPlan }
  /** Approved WebSearch: run the configured search backend, then `completeWebSearch`. */
  | { kind: "web_search"; args: WebSearchArgs }
  /** The response's branch does not answer the query: a protocol error (docs/protocol.md "Bridges"). */
  | { kind: "mismatch"; mismatch: true; message: string };
