/**
 * Span name catalogue (docs/observability.md): every span the gateway starts is named from here,
 * and every name here is started somewhere. GenAI spans follow the OpenTelemetry GenAI
 * semantic conventions: their name is `{operation} {subject}` (see {@link genAiSpanName}).
 * Attribute keys live in {@link ATTR} and {@link GENAI}; attribute values are never secrets
 * (the scrubbing span processor is a safety net, not a licence).
 */
export const SPAN = {
  /** SERVER, ingress: one BidiAppend call. */
  bidiAppend: "gateway.bidi_append",
  /** SERVER, ingress: one client message of an HTTP/2 AgentService/Run stream (its BidiAppend). */
  agentRunAppend: "gateway.agent_run.append",
  /** SERVER, ingress: one RunSSE stream (linked to the run's trace once its first frame is read). */
  runSse: "gateway.run_sse",
  /** PRODUCER, ingress: the append of one client message to the request's input (the bus entry). */
  busAppendInput: "gateway.bus.append_input",
  /** PRODUCER, ingress: the dispatch of a generation's run job. */
  jobDispatch: "gateway.job_dispatch",
  /** CONSUMER, worker: one generation's run; child of its first input entry, linked to the job. */
  run: "gateway.run",
  /** SERVER, ingress: one request to an OpenAI- or Anthropic-compatible endpoint (docs/compat.md); parent of its provider calls. */
  compatRequest: "gateway.compat_request",
} as const;

export type SpanName = (typeof SPAN)[keyof typeof SPAN];

/** Span event names. */
export const SPAN_EVENT = {
  /** On `gateway.run`: a step changed the run's phase (`byok.phase.from`, `byok.phase.to`, `byok.transition.cause`). */
  runTransition: "gateway.run.transition",
} as const;

/** GenAI operations the gateway performs (`gen_ai.operation.name`). */
export const GENAI_OPERATION = {
  /** CLIENT, worker: one provider call (`chat {gen_ai.request.model}`). */
  chat: "chat",
  /** INTERNAL, worker: one client-side tool execution (`execute_tool {gen_ai.tool.name}`). */
  executeTool: "execute_tool",
} as const;

export type GenAiOperation = (typeof GENAI_OPERATION)[keyof typeof GENAI_OPERATION];

/** `{gen_ai.operation.name} {subject}`: the model for `chat`, the tool name for `execute_tool`. */
export function genAiSpanName(operation: GenAiOperation, subject: string): string {
  return subject ? `${operation} ${subject}` : operation;
}

/** Gateway attribute keys. */
export const ATTR = {
  tenantId: "byok.tenant_id",
  requestId: "byok.request_id",
  conversationId: "byok.conversation_id",
  generation: "byok.generation",
  appendSeqno: "byok.append_seqno",
  appendOutcome: "byok.append_outcome",
  modelCallId: "byok.model_call_id",
  attempt: "byok.attempt",
  /** The gateway's provider kind (API flavour): openai-responses, openai-chat, anthropic … */
  provider: "byok.provider",
  /** The Cursor model id the run asked for (before routing). */
  modelId: "byok.model_id",
  endCode: "byok.end_code",
  takeover: "byok.takeover",
  /** A run phase change (event `gateway.run.transition`): the phases and what caused it (event type or client message kind). */
  phaseFrom: "byok.phase.from",
  phaseTo: "byok.phase.to",
  transitionCause: "byok.transition.cause",
  /** HTTP semantic conventions, on `gateway.compat_request`. */
  httpRoute: "http.route",
  httpResponseStatusCode: "http.response.status_code",
  messagingSystem: "messaging.system",
  messagingOperation: "messaging.operation.type",
  errorType: "error.type",
} as const;

/** OpenTelemetry GenAI semantic-convention attribute keys. */
export const GENAI = {
  operationName: "gen_ai.operation.name",
  providerName: "gen_ai.provider.name",
  requestModel: "gen_ai.request.model",
  requestMaxTokens: "gen_ai.request.max_tokens",
  responseModel: "gen_ai.response.model",
  responseFinishReasons: "gen_ai.response.finish_reasons",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  cacheReadInputTokens: "gen_ai.usage.cache_read.input_tokens",
  cacheCreationInputTokens: "gen_ai.usage.cache_creation.input_tokens",
  reasoningOutputTokens: "gen_ai.usage.reasoning.output_tokens",
  conversationId: "gen_ai.conversation.id",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolType: "gen_ai.tool.type",
  /** Opt-in content (never in privacy mode): the instructions, input and output messages as JSON. */
  systemInstructions: "gen_ai.system_instructions",
  inputMessages: "gen_ai.input.messages",
  outputMessages: "gen_ai.output.messages",
} as const;
