/** The Cursor client headers the gateway understands (docs/protocol.md "Client calls"). */
export interface ClientHeaders {
  requestId: string | undefined;
  originalRequestId: string | undefined;
  clientType: string | undefined;
  clientVersion: string | undefined;
  streaming: boolean;
  ghostMode: boolean;
  /** Only whether one was sent: the key itself is a client secret, never logged or stored. */
  hasBlobEncryptionKey: boolean;
  /** `x-gateway-resume-after`: frames of this generation the client already has. */
  resumeAfter: number | undefined;
}

export function readClientHeaders(h: Headers): ClientHeaders {
  const resume = h.get("x-gateway-resume-after");
  return {
    requestId: h.get("x-request-id") ?? undefined,
    originalRequestId: h.get("x-original-request-id") ?? undefined,
    clientType: h.get("x-cursor-client-type") ?? undefined,
    clientVersion: h.get("x-cursor-client-version") ?? undefined,
    streaming: h.get("x-cursor-streaming") === "true",
    ghostMode: h.get("x-ghost-mode") === "true",
    hasBlobEncryptionKey: h.has("x-blob-encryption-key"),
    resumeAfter: resume === null ? undefined : /^\d{1,9}$/.test(resume) ? Number(resume) : Number.NaN,
  };
}

/** Fields safe to log for a request (no secrets). */
export function loggableHeaders(c: ClientHeaders): Record<string, unknown> {
  return {
    xRequestId: c.requestId,
    originalRequestId: c.originalRequestId,
    clientType: c.clientType,
    clientVersion: c.clientVersion,
    ghostMode: c.ghostMode,
  };
}
