/**
 * Anthropic models on Amazon Bedrock (InvokeModelWithResponseStream), as documented:
 * - https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html
 *   (POST /model/{modelId}/invoke-with-response-stream; response: `application/vnd.amazon.eventstream`;
 *   `chunk` events carry a PayloadPart `{ "bytes": <base64> }`; exceptions are separate
 *   messages: throttlingException, modelStreamErrorException, validationException,
 *   internalServerException, serviceUnavailableException, modelTimeoutException)
 * - https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html
 *   (body = Messages body without `model`/`stream`, plus `anthropic_version: "bedrock-2023-05-31"`;
 *   each chunk's bytes are one Anthropic stream event, in the Messages API order)
 * - https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream
 *   (AWS event stream message framing: prelude, headers, payload, CRC32s)
 * HTTP errors carry `x-amzn-ErrorType` and a `{"message": …}` body.
 */
import { EventStreamCodec } from "@smithy/eventstream-codec";
import type { ApiRenderer, Frame } from "./renderer.js";
import { anthropicEvents, anthropicMessage } from "./anthropic-messages.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const codec = new EventStreamCodec(
  (bytes: Uint8Array) => decoder.decode(bytes),
  (text: string) => encoder.encode(text),
);

function chunkFrame(payloadJson: string): Uint8Array {
  return codec.encode({
    headers: {
      ":event-type": { type: "string", value: "chunk" },
      ":content-type": { type: "string", value: "application/json" },
      ":message-type": { type: "string", value: "event" },
    },
    body: encoder.encode(JSON.stringify({ bytes: Buffer.from(payloadJson, "utf8").toString("base64") })),
  });
}

function exceptionFrame(exceptionType: string, message: string): Uint8Array {
  return codec.encode({
    headers: {
      ":exception-type": { type: "string", value: exceptionType },
      ":content-type": { type: "string", value: "application/json" },
      ":message-type": { type: "string", value: "exception" },
    },
    body: encoder.encode(JSON.stringify({ message })),
  });
}

const ERROR_TYPES: Record<number, string> = {
  400: "ValidationException",
  403: "AccessDeniedException",
  404: "ResourceNotFoundException",
  408: "ModelTimeoutException",
  424: "ModelErrorException",
  429: "ThrottlingException",
  500: "InternalServerException",
  503: "ServiceUnavailableException",
};

const MODEL_PATH = /\/model\/[^/]+\/(invoke-with-response-stream|invoke)$/;

export const bedrockRenderer: ApiRenderer = {
  api: "bedrock-anthropic",
  streamContentType: "application/vnd.amazon.eventstream",
  matches: (method, pathname) => method === "POST" && MODEL_PATH.test(pathname),
  isStreaming: (_body, pathname) => pathname.endsWith("/invoke-with-response-stream"),
  streamFrames: (script, ctx): Frame[] => anthropicEvents(script, ctx).map((e) => chunkFrame(JSON.stringify(e))),
  /** `streamError.code` is the exception type, e.g. `throttlingException`, `modelStreamErrorException`. */
  streamErrorFrame: (err) => exceptionFrame(err.code, err.message),
  /** A well-framed chunk whose bytes are not JSON. */
  malformedFrame: () => chunkFrame('{"type":"content_block_delta","delta":'),
  jsonResponse: anthropicMessage,
  errorBody: (status) => ({ message: status === 400 ? "Malformed input request, please reformat your input and try again." : `Simulated Bedrock error ${status}` }),
  errorHeaders: (status) => ({ "x-amzn-errortype": `${ERROR_TYPES[status] ?? (status >= 500 ? "InternalServerException" : "ValidationException")}:http://internal.amazon.com/coral/com.amazon.bedrock/` }),
};
