/**
 * What the vendors refuse before they generate anything, with their own error bodies, so a
 * gateway bug that real providers reject fails here too:
 *
 * - a tool call without its result (and a result without its call), the most common way an
 *   agent conversation dies after an interrupted tool run;
 * - a prompt larger than the model's context window;
 * - an empty `messages` array (Chat Completions and Messages).
 *
 * The messages are the vendors' own wording as they return it (OpenAI Chat Completions and
 * Azure OpenAI, OpenAI Responses, Anthropic Messages, and Bedrock, which wraps the Anthropic
 * message in a `ValidationException`). Token counts are the simulator's approximation (the
 * request body's length / 4); vendors count with their tokenizers.
 */
import type { SimApi } from "./recording.js";
import type { SimRequest } from "./recording.js";
import type { SimHttpError } from "./script.js";

/** Context window the simulator enforces when a test does not name one for the model. */
export const DEFAULT_SIM_CONTEXT_WINDOW = 200_000;

/** The simulator's token count of a request: about four characters per token. */
export function simTokens(request: SimRequest): number {
  return Math.ceil(request.rawBody.length / 4);
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);

function openAIError(message: string, param: string | null, code: string | null): SimHttpError {
  return { status: 400, body: { error: { message, type: "invalid_request_error", param, code } } };
}

function anthropicError(message: string): SimHttpError {
  return { status: 400, body: { type: "error", error: { type: "invalid_request_error", message }, request_id: "req_sim_invalid" } };
}

function bedrockError(modelMessage: string): SimHttpError {
  return {
    status: 400,
    body: { message: `The model returned the following errors: ${modelMessage}` },
    headers: { "x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/" },
  };
}

/** Chat Completions: every assistant `tool_calls` message is followed by a `tool` message per call id. */
function chatToolOrder(body: Obj): SimHttpError | undefined {
  const messages = list(body["messages"]);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m["role"] === "tool") {
      const prev = messages.slice(0, i).findLast((p) => p["role"] !== "tool");
      const answered = list(prev?.["tool_calls"]).some((c) => c["id"] === m["tool_call_id"]);
      if (!answered) return openAIError("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", `messages.[${i}].role`, null);
      continue;
    }
    const calls = list(m["tool_calls"]);
    if (m["role"] !== "assistant" || calls.length === 0) continue;
    const answered = new Set<unknown>();
    for (let j = i + 1; j < messages.length && messages[j]!["role"] === "tool"; j++) answered.add(messages[j]!["tool_call_id"]);
    const missing = calls.map((c) => String(c["id"])).filter((id) => !answered.has(id));
    if (missing.length) {
      return openAIError(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(", ")}`,
        `messages.[${i}].role`,
        null,
      );
    }
  }
  return undefined;
}

/** Responses: every `function_call` input item has a `function_call_output` with its call id, and vice versa. */
function responsesToolOrder(body: Obj): SimHttpError | undefined {
  const input = list(body["input"]);
  const calls = input.filter((i) => i["type"] === "function_call").map((i) => String(i["call_id"]));
  const outputs = input.filter((i) => i["type"] === "function_call_output").map((i) => String(i["call_id"]));
  const orphan = outputs.find((id) => !calls.includes(id));
  if (orphan !== undefined) return openAIError(`No tool call found for function call output with call_id ${orphan}.`, "input", null);
  const missing = calls.find((id) => !outputs.includes(id));
  if (missing !== undefined) return openAIError(`No tool output found for function call ${missing}.`, "input", null);
  return undefined;
}

/** Messages: an assistant message's `tool_use` ids are all answered by `tool_result` blocks in the next message. */
function anthropicToolOrderMessage(body: Obj): string | undefined {
  const messages = list(body["messages"]);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const blocks = list(m["content"]);
    if (m["role"] === "user") {
      const prevUses = new Set(list(messages[i - 1]?.["content"]).filter((b) => b["type"] === "tool_use").map((b) => b["id"]));
      const j = blocks.findIndex((b) => b["type"] === "tool_result" && !prevUses.has(b["tool_use_id"]));
      if (j >= 0) {
        return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(blocks[j]!["tool_use_id"])}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      }
      continue;
    }
    const uses = blocks.filter((b) => b["type"] === "tool_use").map((b) => String(b["id"]));
    if (uses.length === 0) continue;
    const next = messages[i + 1];
    const results = new Set(next?.["role"] === "user" ? list(next["content"]).filter((b) => b["type"] === "tool_result").map((b) => b["tool_use_id"]) : []);
    const missing = uses.filter((id) => !results.has(id));
    if (missing.length) {
      return `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
  }
  return undefined;
}

/** The model a request names: the body's `model`, or Bedrock's model id in the path. */
export function requestedModel(request: SimRequest): string {
  const m = request.body?.["model"];
  if (typeof m === "string") return m;
  const path = /\/model\/([^/]+)\//.exec(request.pathname);
  return path ? decodeURIComponent(path[1]!) : "";
}

/** The vendor's refusal of `request`, or undefined when the vendor would accept it. */
export function vendorRejection(api: SimApi, request: SimRequest, contextWindow: number): SimHttpError | undefined {
  const body = request.body;
  if (!body) return undefined;
  const tokens = simTokens(request);
  const tooLong = tokens > contextWindow;
  switch (api) {
    case "openai-chat":
      if (Array.isArray(body["messages"]) && body["messages"].length === 0) {
        return openAIError("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "messages", "empty_array");
      }
      if (tooLong) {
        return openAIError(
          `This model's maximum context length is ${contextWindow} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
          "messages",
          "context_length_exceeded",
        );
      }
      return chatToolOrder(body);
    case "openai-responses":
      if (tooLong) return openAIError("Your input exceeds the context window of this model. Please adjust your input and try again.", "input", "context_length_exceeded");
      return responsesToolOrder(body);
    case "anthropic-count-tokens":
      return Array.isArray(body["messages"]) && body["messages"].length === 0 ? anthropicError("messages: at least one message is required") : undefined;
    case "anthropic-messages": {
      if (Array.isArray(body["messages"]) && body["messages"].length === 0) return anthropicError("messages: at least one message is required");
      if (tooLong) return anthropicError(`prompt is too long: ${tokens} tokens > ${contextWindow} maximum`);
      const m = anthropicToolOrderMessage(body);
      return m === undefined ? undefined : anthropicError(m);
    }
    case "bedrock-anthropic": {
      if (tooLong) return bedrockError("Input is too long for requested model.");
      const m = anthropicToolOrderMessage(body);
      return m === undefined ? undefined : bedrockError(m);
    }
  }
}
