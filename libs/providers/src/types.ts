/**
 * The provider-neutral contract between the agent engine and every model API adapter.
 *
 * An adapter turns one ModelCallRequest into one provider pass: it yields normalized
 * ProviderEvents in the order the provider produced them and ends with exactly one
 * `completed` event, or throws a ProviderError (failures are typed errors, never events).
 * Adapters never retry (the SDK's own retries are off); the engine owns the retry policy.
 * Aborting `signal` closes the HTTP connection to the provider at once.
 */

export type ProviderKind =
  | "openai-responses"
  | "openai-chat"
  | "anthropic"
  | "azure-openai"
  | "bedrock-anthropic";

/** Where the credentials of a pass came from: the gateway's own keys, or the Cursor client's BYOK ones. */
export type CredentialsSource = "gateway" | "client";

/** One resolved upstream target. Holds secrets: never log, serialize or store it. */
export interface ProviderTarget {
  kind: ProviderKind;
  /** Upstream model (or Azure deployment) name. */
  model: string;
  baseUrl?: string;
  apiKey?: string;
  azure?: { endpoint: string; deployment: string; apiVersion: string };
  bedrock?: { region: string; accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  contextWindow?: number;
  maxOutputTokens?: number;
  credentialsSource: CredentialsSource;
  /**
   * The URL (base URL, Azure endpoint, Bedrock region) came from the client's credentials, not
   * from an operator's route: every connection's resolved address is checked before it connects.
   */
  clientSentUrl?: boolean;
  /** Extra provider options a route maps from RequestedModel parameters. */
  options?: Record<string, unknown>;
  /**
   * (Added.) The effort routing derived for this target from the client's parameters and the
   * route's mapping. Adapters use `ModelCallRequest.reasoningEffort ?? target.reasoningEffort`.
   */
  reasoningEffort?: ReasoningEffort;
}

export type ReasoningEffort = "disabled" | "low" | "medium" | "high" | "xhigh" | "max";

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

/** Reasoning the provider returned, kept so later passes can replay it where the API needs that. */
export interface ReasoningPart {
  text: string;
  /** Anthropic thinking signature, or OpenAI encrypted reasoning content. */
  signature?: string;
  encryptedContent?: string;
  /** Provider's id of the reasoning item (OpenAI Responses). */
  providerItemId?: string;
  /** Anthropic redacted_thinking data. */
  redactedData?: string;
}

export interface ToolCallPart {
  /** Gateway id of the call (namespaced, at most 64 chars); sent back to the provider as the call id. */
  id: string;
  name: string;
  /** Raw JSON text of the arguments as the model produced it. */
  argumentsJson: string;
}

/** The provider-neutral conversation of one model call, in order. */
export type ChatItem =
  | { role: "user"; text: string }
  | {
      role: "assistant";
      text?: string;
      reasoning?: ReasoningPart[];
      toolCalls?: ToolCallPart[];
    }
  | { role: "tool"; toolCallId: string; name: string; output: string; isError?: boolean };

export interface ModelCallRequest {
  target: ProviderTarget;
  /** System instructions. */
  instructions: string;
  items: ChatItem[];
  tools: ToolSpec[];
  reasoningEffort?: ReasoningEffort;
  /** Gateway-side ids of this pass; adapters use them to namespace tool-call ids. */
  modelCallId: string;
  attempt: number;
  signal: AbortSignal;
}

/** Exact usage of one pass, normalized (see libs/providers/README.md "Usage normalization"): input excludes cache reads and writes; reasoning counted inside output. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  /** True when the provider did not report usage and these numbers are the gateway's estimate. */
  estimated: boolean;
  /** Provider's own usage object, for the ledger. Contains no secrets. */
  raw?: unknown;
}

export type OutputItem =
  | { kind: "text"; id: string; text: string }
  | { kind: "reasoning"; id: string; part: ReasoningPart }
  | { kind: "tool_call"; id: string; call: ToolCallPart };

export type ProviderEvent =
  | { type: "item_added"; itemId: string; kind: OutputItem["kind"]; toolName?: string }
  | { type: "text_delta"; itemId: string; text: string }
  | { type: "reasoning_delta"; itemId: string; text: string }
  | { type: "tool_call_delta"; itemId: string; argsDelta: string }
  | { type: "item_done"; item: OutputItem }
  | { type: "completed"; usage: Usage; endTurn: boolean; stopReason?: StopReason; responseModel?: string };

/**
 * Why the provider stopped (added; optional so existing consumers are unaffected):
 * `end_turn` the model finished, `tool_use` it wants tool results, `max_tokens` the output
 * cap cut it, `other` anything else the vendor reported (e.g. a stop sequence, pause_turn).
 */
export type StopReason = "end_turn" | "tool_use" | "max_tokens" | "other";

export type ProviderErrorKind =
  | "rate_limited"
  | "overloaded"
  | "server"
  | "network"
  | "timeout"
  | "malformed_stream"
  | "auth"
  | "quota"
  | "invalid_request"
  | "content_policy"
  | "context_overflow"
  | "not_found"
  | "address_refused"
  | "cancelled";

/**
 * A failed pass. `message` is safe for users (never contains a credential);
 * `cause` keeps the original error for logs (which redact secrets).
 */
export class ProviderError extends Error {
  readonly kind: ProviderErrorKind;
  readonly retryable: boolean;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  /** Usage the provider reported before failing, if any (usage is never lost). */
  readonly partialUsage: Usage | undefined;

  constructor(
    kind: ProviderErrorKind,
    message: string,
    opts: { status?: number; retryAfterMs?: number; cause?: unknown; partialUsage?: Usage } = {},
  ) {
    super(message, { cause: opts.cause });
    this.name = "ProviderError";
    this.kind = kind;
    this.retryable = RETRYABLE.has(kind);
    this.status = opts.status;
    this.retryAfterMs = opts.retryAfterMs;
    this.partialUsage = opts.partialUsage;
  }
}

const RETRYABLE = new Set<ProviderErrorKind>([
  "rate_limited",
  "overloaded",
  "server",
  "network",
  "timeout",
  "malformed_stream",
]);

export interface ProviderAdapter {
  readonly kind: ProviderKind;
  /** One provider pass. Yields events; throws ProviderError. */
  stream(req: ModelCallRequest): AsyncIterable<ProviderEvent>;
}
