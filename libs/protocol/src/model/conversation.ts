/** The provider-neutral conversation a model call sends: items in order, and the tools offered. */

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
