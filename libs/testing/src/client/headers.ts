/** Identity of the simulated Cursor client, sent as headers on both BidiAppend and RunSSE. */
export interface CursorIdentity {
  /** `authorization: Bearer <token>`; omitted when undefined. */
  authToken?: string;
  /** `x-cursor-client-type` (default `ide`). */
  clientType?: string;
  /** `x-cursor-client-version` (default `2.3.41`). */
  clientVersion?: string;
  /** `x-ghost-mode` (default false); `"absent"`: the header is not sent. */
  ghostMode?: boolean | "absent";
  /** `x-blob-encryption-key` (64 hex chars); omitted when undefined. */
  blobEncryptionKey?: string;
  /** Extra headers on every call; per-call headers win. */
  headers?: Record<string, string>;
}

/**
 * The headers a real Cursor client sends on both calls (docs/protocol.md): `x-request-id` = the
 * BidiRequestId, `x-original-request-id` (default: the request id), client type/version,
 * `x-cursor-streaming: true`, `x-ghost-mode`, `authorization`, `x-blob-encryption-key`.
 */
export function cursorHeaders(requestId: string, identity: CursorIdentity, originalRequestId?: string): Record<string, string> {
  const h: Record<string, string> = {
    "connect-protocol-version": "1",
    "x-request-id": requestId,
    "x-original-request-id": originalRequestId ?? requestId,
    "x-cursor-client-type": identity.clientType ?? "ide",
    "x-cursor-client-version": identity.clientVersion ?? "2.3.41",
    "x-cursor-streaming": "true",
  };
  if (identity.ghostMode !== "absent") h["x-ghost-mode"] = identity.ghostMode === true ? "true" : "false";
  if (identity.authToken !== undefined) h.authorization = `Bearer ${identity.authToken}`;
  if (identity.blobEncryptionKey !== undefined) h["x-blob-encryption-key"] = identity.blobEncryptionKey;
  return { ...h, ...identity.headers };
}
