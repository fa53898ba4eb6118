import type { AgentRunRequest, ConversationStateStructure, McpToolDefinition, ModelDetails, RequestedModel } from "@byok/wire";
import { AgentMode } from "@byok/wire";
import type { ClientCredentials, ModelParameter } from "./model/index.js";

export type { ClientCredentials, ModelParameter };


/** What a run does, from its `run_request.action` (docs/actions.md). */
export type RunKind =
  | "user_message" | "resume" | "start_plan" | "execute_plan" | "shell_command" | "summarize"
  | "goal_continuation" | "subscription_notification" | "background_task_completion" | "async_ask_question_completion"
  | "other";

/** What the engine needs from a `run_request` to start a turn. */
export interface RunStart {
  kind: RunKind;
  /** The run's conversation; the request id stands in when the client sent none. */
  conversationId: string;
  runId: string | undefined;
  userText: string;
  messageId: string;
  mode: AgentMode;
  modelId: string;
  parameters: ModelParameter[];
  maxMode: boolean;
  credentials: ClientCredentials | undefined;
  conversationState: ConversationStateStructure | undefined;
  customSystemPrompt: string | undefined;
  /** MCP tools the client offers for this run. */
  mcpTools: McpToolDefinition[];
  /** A subagent run (the client runs it for a parent's Task tool call). */
  isSubagent: boolean;
  /** The client's request context allows web search / web fetch. */
  webSearchAllowed: boolean;
  webFetchAllowed: boolean;
  /** Hook steps the client declared (request_context.hooks_config.configured_steps). */
  hookSteps: string[];
  /** Blobs the client sent inline with the run (verified before use). */
  preFetchedBlobs: { id: Uint8Array; value: Uint8Array }[];
}

function credentialsOf(m: RequestedModel | ModelDetails): ClientCredentials | undefined {
  const c = m.credentials;
  switch (c.case) {
    case "apiKeyCredentials":
      return c.value.baseUrl ? { kind: "api_key", apiKey: c.value.apiKey, baseUrl: c.value.baseUrl } : { kind: "api_key", apiKey: c.value.apiKey };
    case "azureCredentials":
      return { kind: "azure", apiKey: c.value.apiKey, baseUrl: c.value.baseUrl, deployment: c.value.deployment };
    case "bedrockCredentials":
      return {
        kind: "bedrock",
        accessKey: c.value.accessKey,
        secretKey: c.value.secretKey,
        region: c.value.region,
        ...(c.value.sessionToken ? { sessionToken: c.value.sessionToken } : {}),
      };
    case undefined:
      return undefined;
  }
}

/**
 * Reads a run_request. `requested_model` wins over the legacy `model_details` for the model id,
 * parameters and credentials (docs/protocol.md; README "Model routing").
 */
export function readRunStart(req: AgentRunRequest, requestId: string): RunStart {
  const action = req.action?.action;
  let userText = "";
  let messageId = "";
  let mode = AgentMode.AGENT;
  const requestContext =
    action?.case === "userMessageAction" || action?.case === "startPlanAction" || action?.case === "resumeAction" || action?.case === "executePlanAction"
      ? action.value.requestContext
      : undefined;
  let kind: RunKind = "other";
  switch (action?.case) {
    case "userMessageAction":
    case "startPlanAction": {
      const um = action.value.userMessage;
      userText = um?.text ?? "";
      messageId = um?.messageId ?? "";
      if (um?.mode) mode = um.mode;
      kind = action.case === "startPlanAction" ? "start_plan" : "user_message";
      if (action.case === "startPlanAction") mode = AgentMode.PLAN;
      break;
    }
    case "resumeAction":
      kind = "resume";
      break;
    case "executePlanAction": {
      kind = "execute_plan";
      const a = action.value;
      const plan = a.planFileContent ?? (a.plan ? JSON.stringify(a.plan) : "");
      userText = `Execute the plan${a.planFilePath ? ` in ${a.planFilePath}` : ""}.${plan ? `\n\n${plan}` : ""}`;
      mode = a.executionMode || AgentMode.AGENT;
      break;
    }
    case "shellCommandAction":
      kind = "shell_command";
      userText = action.value.shellCommand?.command ?? "";
      break;
    case "summarizeAction":
      kind = "summarize";
      break;
    case "goalContinuationAction":
      kind = "goal_continuation";
      userText = "Continue working toward the conversation's goal.";
      break;
    case "subscriptionNotificationAction":
      kind = "subscription_notification";
      userText = action.value.notifications.map((n) => n.text).filter(Boolean).join("\n\n");
      break;
    case "backgroundTaskCompletionAction":
      kind = "background_task_completion";
      userText = action.value.completions
        .map((c) => `Background task ${c.taskId}${c.title ? ` (${c.title})` : ""} finished${c.detail ? `: ${c.detail}` : "."}`)
        .join("\n");
      break;
    case "asyncAskQuestionCompletionAction": {
      kind = "async_ask_question_completion";
      const r = action.value.result?.result;
      const answers = r?.case === "success" ? r.value.answers.map((a) => `${a.questionId}: ${[...a.selectedOptionIds, a.freeformText].filter(Boolean).join(", ")}`).join("; ") : r?.case ?? "no answer";
      userText = `The user answered your earlier question (tool call ${action.value.originalToolCallId}): ${answers}`;
      break;
    }
    default:
      break;
  }
  const rm = req.requestedModel;
  const md = req.modelDetails;
  const source: RequestedModel | ModelDetails | undefined = rm?.modelId ? rm : md?.modelId ? md : rm ?? md;
  return {
    kind,
    conversationId: req.conversationId || requestId,
    runId: req.runId,
    userText,
    messageId,
    mode,
    modelId: source?.modelId ?? "",
    parameters: rm?.parameters.map((p) => ({ id: p.id, value: p.value })) ?? [],
    maxMode: rm?.maxMode ?? md?.maxMode ?? false,
    credentials: (rm && credentialsOf(rm)) ?? (md && credentialsOf(md)),
    conversationState: req.conversationState,
    customSystemPrompt: req.customSystemPrompt,
    mcpTools: req.mcpTools?.mcpTools ?? [],
    isSubagent: Boolean(req.subagentTypeName),
    webSearchAllowed: requestContext?.webSearchEnabled ?? true,
    webFetchAllowed: requestContext?.webFetchEnabled ?? true,
    preFetchedBlobs: req.preFetchedBlobs.map((b) => ({ id: b.id, value: b.value })),
    hookSteps: requestContext?.hooksConfig?.configuredSteps ?? [],
  };
}
