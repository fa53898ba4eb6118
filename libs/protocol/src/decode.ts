import { fromBinary } from "@bufbuild/protobuf";
import { AgentClientMessageSchema, type AgentClientMessage } from "@byok/wire";

export type DecodeResult =
  | { ok: true; message: AgentClientMessage }
  | { ok: false; reason: string };

/**
 * Decodes AgentClientMessage bytes. Unknown fields (newer clients) are kept, never rejected;
 * only bytes that are not valid protobuf for the message fail.
 */
export function decodeClientMessage(bytes: Uint8Array): DecodeResult {
  try {
    return { ok: true, message: fromBinary(AgentClientMessageSchema, bytes, { readUnknownFields: true }) };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}
