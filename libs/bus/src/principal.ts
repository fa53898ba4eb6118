import type { TraceCarrier } from "./types.js";

/**
 * Who a run belongs to, as the ingress authenticated it. Carried from BidiAppend to the run in
 * the metadata of the request's input entries (keys below), next to the W3C trace context (the Redis
 * bus stores the carrier as it is, so no script changes).
 */
export interface RunPrincipal {
  userId: string | undefined;
  keyId: string | undefined;
  /** `x-original-request-id`: groups a client's retries of one run. */
  originalRequestId: string | undefined;
  /** `x-ghost-mode: true`: content must not be stored. */
  ghostMode: boolean;
}

const META = { user: "byok-user", key: "byok-key", original: "byok-original-request-id", ghost: "byok-ghost" } as const;

export function principalMeta(p: RunPrincipal): TraceCarrier {
  const m: TraceCarrier = {};
  if (p.userId) m[META.user] = p.userId;
  if (p.keyId) m[META.key] = p.keyId;
  if (p.originalRequestId) m[META.original] = p.originalRequestId;
  if (p.ghostMode) m[META.ghost] = "1";
  return m;
}

export function principalFromMeta(m: TraceCarrier | undefined): RunPrincipal {
  return {
    userId: m?.[META.user],
    keyId: m?.[META.key],
    originalRequestId: m?.[META.original],
    ghostMode: m?.[META.ghost] === "1",
  };
}

