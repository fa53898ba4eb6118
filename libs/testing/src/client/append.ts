import { gzipSync } from "node:zlib";
import { create, toBinary, toJsonString } from "@bufbuild/protobuf";
import { AgentClientMessageSchema, BidiAppendRequestSchema, encodeHex, type AgentClientMessage } from "@byok/wire";

export const BIDI_APPEND_PATH = "/aiserver.v1.BidiService/BidiAppend";

export interface AppendOptions {
  /** Put the message bytes in `data_binary` (field 4) instead of hex `data`. */
  binary?: boolean;
  /** gzip the request body and send `content-encoding: gzip`. */
  gzip?: boolean;
  /** Send `application/json` (proto3 JSON of BidiAppendRequest, `data` hex) instead of `application/proto`. */
  json?: boolean;
  /** Extra headers for this call (win over the client's). */
  headers?: Record<string, string>;
  /** `x-original-request-id` for this call (default: the request id). */
  originalRequestId?: string;
  signal?: AbortSignal;
}

/** BidiAppend's answer: `ok` means only "accepted", never "run finished". */
export type AppendResult = { ok: true } | { ok: false; status: number; code: string; message: string };

/**
 * Encodes a BidiAppend body. `msg` may be raw bytes (sent as the AgentClientMessage bytes
 * unchecked, e.g. to provoke `invalid_argument`). Pure.
 */
export function encodeAppendBody(
  requestId: string,
  seqno: number | bigint,
  msg: AgentClientMessage | Uint8Array,
  opts: Pick<AppendOptions, "binary" | "gzip" | "json"> = {},
): { body: Uint8Array; headers: Record<string, string> } {
  const bytes = msg instanceof Uint8Array ? msg : toBinary(AgentClientMessageSchema, msg);
  const req = create(BidiAppendRequestSchema, {
    requestId: { requestId },
    appendSeqno: BigInt(seqno),
    ...(opts.binary ? { dataBinary: bytes } : { data: encodeHex(bytes) }),
  });
  let body = opts.json ? new TextEncoder().encode(toJsonString(BidiAppendRequestSchema, req)) : toBinary(BidiAppendRequestSchema, req);
  const headers: Record<string, string> = { "content-type": opts.json ? "application/json" : "application/proto" };
  if (opts.gzip) {
    body = new Uint8Array(gzipSync(body));
    headers["content-encoding"] = "gzip";
  }
  return { body, headers };
}
