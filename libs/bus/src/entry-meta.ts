import type { TraceCarrier } from "@byok/telemetry";

/**
 * Who a run belongs to, as the ingress authenticated it. Carried from BidiAppend to the run in
 * the metadata of the request's input entries.
 */
export interface RunPrincipal {
  userId: string | undefined;
  keyId: string | undefined;
  /** `x-original-request-id`: groups a client's retries of one run. */
  originalRequestId: string | undefined;
  /** `x-ghost-mode: true`: content must not be stored. */
  ghostMode: boolean;
}

/** The principal of an entry appended without one (internal appends, tests): no user, content may be stored. */
export const ANONYMOUS_PRINCIPAL: RunPrincipal = Object.freeze({ userId: undefined, keyId: undefined, originalRequestId: undefined, ghostMode: false });

/** What an input entry carries besides its payload: the W3C trace context of its append and the run's principal. */
export interface EntryMeta {
  /** Absent: no trace context (read back as `{}`). */
  trace?: TraceCarrier;
  /** Absent: appended without an authenticated principal (ANONYMOUS_PRINCIPAL). */
  principal?: RunPrincipal;
}

/**
 * The principal is stored under `byok-*` keys in the same flat string map as the trace context
 * (the Redis bus stores one map per entry, so no script or format change was needed); nothing
 * else may use that prefix.
 */
const PRINCIPAL_KEY = { user: "byok-user", key: "byok-key", original: "byok-original-request-id", ghost: "byok-ghost" } as const;
const PRINCIPAL_PREFIX = "byok-";

/** The one stored form of an entry's metadata. */
export function encodeEntryMeta(meta: EntryMeta): Record<string, string> {
  const m: Record<string, string> = {};
  for (const [k, v] of Object.entries(meta.trace ?? {})) if (!k.startsWith(PRINCIPAL_PREFIX)) m[k] = v;
  const p = meta.principal;
  if (p?.userId) m[PRINCIPAL_KEY.user] = p.userId;
  if (p?.keyId) m[PRINCIPAL_KEY.key] = p.keyId;
  if (p?.originalRequestId) m[PRINCIPAL_KEY.original] = p.originalRequestId;
  if (p?.ghostMode) m[PRINCIPAL_KEY.ghost] = "1";
  return m;
}

/** Reads the stored form back: the trace context, and the principal when one was stored. */
export function decodeEntryMeta(m: Readonly<Record<string, string>>): EntryMeta {
  const trace: TraceCarrier = {};
  let stored = false;
  for (const [k, v] of Object.entries(m)) {
    if (k.startsWith(PRINCIPAL_PREFIX)) stored = true;
    else trace[k] = v;
  }
  if (!stored) return { trace };
  return {
    trace,
    principal: {
      userId: m[PRINCIPAL_KEY.user],
      keyId: m[PRINCIPAL_KEY.key],
      originalRequestId: m[PRINCIPAL_KEY.original],
      ghostMode: m[PRINCIPAL_KEY.ghost] === "1",
    },
  };
}
