import { gunzipSync } from "node:zlib";
import { fromBinary } from "@bufbuild/protobuf";
import {
  AgentServerMessageSchema,
  ENVELOPE_FLAG_COMPRESSED,
  ENVELOPE_FLAG_END_STREAM,
  EnvelopeReader,
  parseEndStream,
  type AgentServerMessage,
  type EndStream,
} from "@byok/wire";

/**
 * One item of a RunSSE stream. `raw` is the message's protobuf payload after decompression;
 * `flags` the envelope flags as received (0x01 set when the frame was compressed).
 */
export type StreamItem =
  | { kind: "message"; message: AgentServerMessage; raw: Uint8Array; flags: number }
  | { kind: "end"; end: EndStream };

/** The stream broke the framing rules (compressed without an encoding, data after end-stream ...). */
export class StreamProtocolError extends Error {
  override readonly name = "StreamProtocolError";
}

/** The body closed without an end-stream frame: never a success (docs/protocol.md "Ending a stream"). */
export class StreamTruncatedError extends Error {
  override readonly name = "StreamTruncatedError";
  constructor(readonly items: number, readonly pendingBytes: number) {
    super(`RunSSE body closed without an end-stream frame after ${items} items (${pendingBytes} bytes of a partial envelope)`);
  }
}

export interface FrameDecoder {
  /** Feeds a chunk (any split); returns the whole items it completed, in order. Throws StreamProtocolError. */
  push(chunk: Uint8Array): StreamItem[];
  /** Call at end of body; throws StreamTruncatedError unless the end-stream frame was seen. */
  finish(): void;
  readonly ended: boolean;
}

/**
 * Pure RunSSE body decoder: Connect envelopes → StreamItems. `encoding` is the response's
 * `connect-content-encoding` (only `gzip` and `identity` are understood).
 */
export function createFrameDecoder(encoding: string | null | undefined): FrameDecoder {
  const reader = new EnvelopeReader();
  let ended = false;
  let count = 0;
  const payload = (flags: number, data: Uint8Array): Uint8Array => {
    if ((flags & ENVELOPE_FLAG_COMPRESSED) === 0) return data;
    if (encoding !== "gzip") throw new StreamProtocolError(`compressed frame but connect-content-encoding is ${encoding ?? "absent"}`);
    return new Uint8Array(gunzipSync(data));
  };
  return {
    push(chunk) {
      const out: StreamItem[] = [];
      for (const env of reader.push(chunk)) {
        if (ended) throw new StreamProtocolError("frame after the end-stream frame");
        const data = payload(env.flags, env.data);
        if (env.flags & ENVELOPE_FLAG_END_STREAM) {
          ended = true;
          out.push({ kind: "end", end: parseEndStream(data) });
        } else {
          out.push({ kind: "message", message: fromBinary(AgentServerMessageSchema, data), raw: data, flags: env.flags });
        }
        count++;
      }
      return out;
    },
    finish() {
      if (!ended) throw new StreamTruncatedError(count, reader.pendingBytes);
    },
    get ended() {
      return ended;
    },
  };
}
