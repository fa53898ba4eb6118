/**
 * The provider-neutral contract between the agent engine and every model API adapter
 * (`@byok/providers` implements it).
 *
 * An adapter turns one ModelCallRequest into one provider pass: it yields normalized
 * ProviderEvents in the order the provider produced them and ends with exactly one
 * `completed` event, or throws a ProviderError (failures are typed errors, never events).
 * Adapters never retry (the SDK's own retries are off); the engine owns the retry policy.
 * Aborting `signal` closes the HTTP connection to the provider at once.
 */
import type { ChatItem, ToolSpec } from "./conversation.js";
import type { ProviderEvent } from "./events.js";

export type ProviderKind =
  | "openai-responses"
  | "openai-chat"
  | "anthropic"
  | "azure-openai"
  | "bedrock-anthropic";

/** Where the credentials of a pass came from: the gateway's own keys, or the Cursor client's BYOK ones. */
export type CredentialsSource = "gateway" | "client";

export type ReasoningEffort = "disabled" | "low" | "medium" | "high" | "xhigh" | "max";

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
  /**
   * A compatible endpoint's caller speaks the target's own API: send its body instead of one
   * built from `instructions`, `items` and `tools` (docs/compat.md "Passthrough and translation").
   */
  passthrough?: VendorPassthrough;
}

/**
 * The caller's request body in the target's API. The adapter rewrites only the route's fields
 * (`model`, the output cap when the route's is lower, the route's `extraBody`, and on Chat
 * Completions `stream_options.include_usage` so usage is exact); everything else goes as sent.
 */
export interface VendorPassthrough {
  body: Record<string, unknown>;
  /** Whether the caller asked for a stream; a non-streaming request is sent non-streaming. */
  stream: boolean;
  /** Each stream event, or the one response body, as the SDK parsed it (every field kept), before it is decoded. */
  onVendorEvent(ev: Record<string, unknown>): void;
}

export interface ProviderAdapter {
  readonly kind: ProviderKind;
  /** One provider pass. Yields events; throws ProviderError. */
  stream(req: ModelCallRequest): AsyncIterable<ProviderEvent>;
  /**
   * The vendor's own input token count of a request body in the adapter's API (the caller's
   * body, `model` rewritten to the target's), where the vendor has a counting API. Throws ProviderError.
   */
  countTokens?(req: TokenCountRequest): Promise<number>;
}

export interface TokenCountRequest {
  target: ProviderTarget;
  body: Record<string, unknown>;
  signal: AbortSignal;
}
