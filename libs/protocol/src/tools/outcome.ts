import { create } from "@bufbuild/protobuf";
import { ToolCallSchema, type ToolCall } from "@byok/wire";
import { MAX_MODEL_TEXT_CHARS, truncateHead } from "./limits.js";
import type { ToolCallVariant, ToolEffects, ToolOutcome } from "./types.js";

/** A `ToolCall` with the call id and (optionally) a variant. */
export function toolCall(callId: string, tool?: ToolCallVariant): ToolCall {
  return create(ToolCallSchema, { toolCallId: callId, ...(tool ? { tool } : {}) });
}

/**
 * Builds a ToolOutcome, enforcing its guarantees: text never empty, capped at
 * {@link MAX_MODEL_TEXT_CHARS} with a truncation note.
 */
export function outcome(modelText: string, isError: boolean, completed: ToolCall, effects?: ToolEffects): ToolOutcome {
  const text = modelText.trim() === "" ? (isError ? "The tool failed without a message." : "(no output)") : modelText;
  const capped = truncateHead(text, MAX_MODEL_TEXT_CHARS, "The result was too long for one tool result; narrow the request.");
  return effects ? { modelText: capped, isError, completed, effects } : { modelText: capped, isError, completed };
}
