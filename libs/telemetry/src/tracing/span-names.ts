/**
 * Span name catalogue: every span the gateway starts is named from here, so dashboards and tests
 * match on constants. Attribute keys live in {@link ATTR}; attribute values are never secrets
 * (the scrubbing span processor is a safety net, not a licence).
 */
export const SPAN = {
  bidiAppend: "gateway.bidi_append",
  runSse: "gateway.run_sse",
  run: "gateway.run",
  modelCall: "gateway.model_call",
  busAppendInput: "gateway.bus.append_input",
  busAppendOutput: "gateway.bus.append_output",
  busRead: "gateway.bus.read",
  jobDispatch: "gateway.job_dispatch",
  execBridge: "gateway.exec",
  interactionBridge: "gateway.interaction",
  kvBridge: "gateway.kv",
  checkpoint: "gateway.checkpoint",
  storeQuery: "gateway.store",
} as const;

export type SpanName = (typeof SPAN)[keyof typeof SPAN];

/** Attribute keys used on gateway spans. */
export const ATTR = {
  tenantId: "byok.tenant_id",
  requestId: "byok.request_id",
  originalRequestId: "byok.original_request_id",
  conversationId: "byok.conversation_id",
  runId: "byok.run_id",
  generation: "byok.generation",
  appendSeqno: "byok.append_seqno",
  modelCallId: "byok.model_call_id",
  provider: "byok.provider",
  modelId: "byok.model_id",
  endCode: "byok.end_code",
  outcome: "byok.outcome",
} as const;
