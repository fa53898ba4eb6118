import type { SimApi, SimRequest } from "./recording.js";
import type { SimScript, SimStreamError } from "./script.js";

/** One unit the simulator writes (an SSE event or a binary event-stream message). Fault indexes count these. */
export type Frame = string | Uint8Array;

export interface RenderContext {
  request: SimRequest;
  /** Per-simulator sequence number, for unique vendor ids. */
  seq: number;
}

/** Turns a vendor-neutral script into one vendor's exact wire format. */
export interface ApiRenderer {
  readonly api: SimApi;
  /** Whether this API serves `pathname` (query string removed). */
  matches(method: string, pathname: string): boolean;
  /** Whether the request asked for a streamed answer. */
  isStreaming(body: Record<string, unknown> | undefined, pathname: string): boolean;
  readonly streamContentType: string;
  /** The complete stream, terminator included. */
  streamFrames(script: SimScript, ctx: RenderContext): Frame[];
  /** The frame that reports `err` inside the stream. */
  streamErrorFrame(err: SimStreamError): Frame;
  /** A frame the vendor's SDK cannot decode. */
  malformedFrame(): Frame;
  /** The non-streamed answer. */
  jsonResponse(script: SimScript, ctx: RenderContext): unknown;
  /** Vendor-shaped error body for an HTTP error without an explicit body. */
  errorBody(status: number, request: SimRequest): unknown;
  /** Headers vendors send with an HTTP error (e.g. Bedrock's x-amzn-errortype). */
  errorHeaders?(status: number): Record<string, string>;
}

/** `data: <json>\n\n` — one SSE event without an event name (OpenAI Chat Completions style). */
export function sseData(payload: unknown): string {
  return `data: ${typeof payload === "string" ? payload : JSON.stringify(payload)}\n\n`;
}

/** `event: <name>\ndata: <json>\n\n` — a named SSE event (Responses, Anthropic Messages). */
export function sseEvent(name: string, payload: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`;
}
