import { SpanKind, trace } from "@opentelemetry/api";
import type { ConnectError, HandlerContext } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import type { Bus, RequestRef, RunDispatcher, RunPrincipal } from "@byok/bus";
import { decodeClientMessage } from "@byok/protocol";
import { ATTR, injectTraceContext, SPAN, withSpan, type GatewayMetrics, type Logger } from "@byok/telemetry";
import { decodeHex, ErrorDetailsSchema, type BidiAppendRequest, type BidiAppendResponse, BidiAppendResponseSchema } from "@byok/wire";
import { create, toBinary } from "@bufbuild/protobuf";
import { principalOf, type Authenticator, type Principal } from "./auth.js";
import { loggableHeaders, readClientHeaders, type ClientHeaders } from "./client-headers.js";
import { invalidArgument, overloaded, resourceExhausted, unavailable } from "./errors.js";

/** The `retry-after` (seconds) of a run refused because every worker is busy. */
const ADMISSION_RETRY_AFTER_S = 2;

/** Ends a generation no worker will run with `error`, as its readers will see it. */
async function endGeneration(bus: Bus, ref: RequestRef, generation: number, error: ConnectError): Promise<void> {
  const epoch = (await bus.claim(ref, generation)).epoch;
  const details = error.findDetails(ErrorDetailsSchema);
  await bus.endOutput(ref, generation, epoch, {
    ok: false,
    code: codeToString(error.code),
    message: error.rawMessage,
    ...(details[0] ? { errorDetails: toBinary(ErrorDetailsSchema, details[0]) } : {}),
  });
}

export interface BidiAppendDeps {
  bus: Bus;
  dispatcher: RunDispatcher;
  auth: Authenticator;
  limits: { maxPayloadBytes: number };
  logger: Logger;
  metrics: GatewayMetrics;
  /**
   * The tenant's policy enforces privacy mode (docs/control-plane.md). Resolved here, once per
   * append, so the run's ghost-mode flag on the bus is the effective one for every consumer
   * (storage, spans, metering); absent: the client's `x-ghost-mode` alone decides.
   */
  privacyEnforced?: (tenantId: string) => Promise<boolean>;
}

const tracer = trace.getTracer("@byok/edge");

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}

/** The payload of an append: hex `data` or `data_binary`; both only when they agree. */
function payloadOf(req: BidiAppendRequest, maxPayloadBytes: number): Uint8Array {
  let fromHex: Uint8Array | undefined;
  if (req.data.length > 0) {
    if (req.data.length / 2 > maxPayloadBytes) {
      throw resourceExhausted(`The append payload is ${Math.ceil(req.data.length / 2)} bytes; the limit is ${maxPayloadBytes} bytes.`);
    }
    const d = decodeHex(req.data);
    if (d === "odd_length") throw invalidArgument("BidiAppend `data` must be hex of the AgentClientMessage bytes, but it has an odd number of characters.");
    if (d === "non_hex") throw invalidArgument("BidiAppend `data` must be hex of the AgentClientMessage bytes, but it contains non-hex characters.");
    fromHex = d;
  }
  const binary = req.dataBinary.byteLength > 0 ? req.dataBinary : undefined;
  if (binary && binary.byteLength > maxPayloadBytes) {
    throw resourceExhausted(`The append payload is ${binary.byteLength} bytes; the limit is ${maxPayloadBytes} bytes.`);
  }
  if (fromHex && binary && !sameBytes(fromHex, binary)) {
    throw invalidArgument("BidiAppend carries both `data` and `data_binary` with different content; send one of them.");
  }
  const payload = fromHex ?? binary;
  if (!payload) throw invalidArgument("BidiAppend carries no payload: set `data` (hex) or `data_binary`.");
  return payload;
}

/**
 * Records one AgentClientMessage of a request and dispatches its run generation: the part of
 * BidiAppend that AgentService/Run shares. Resolves once the append is durable (also when
 * buffered ahead of a gap); never waits for the run. Throws ConnectErrors a client can act on.
 */
export function createClientAppender(deps: BidiAppendDeps) {
  return async (principal: Principal, headers: ClientHeaders, requestId: string, seqno: bigint, payload: Uint8Array, via: string): Promise<void> => {
    // Every line of this append names its tenant and request (and, inside its span, the trace).
    // The child logger (its bindings scrubbed) is made only for a line that is written: most
    // appends write none at the usual levels.
    let child: Logger | undefined;
    const log = () => (child ??= deps.logger.child({ tenant: principal.tenantId, requestId }));
    const decoded = decodeClientMessage(payload);
    if (!decoded.ok) {
      // The decoder's own wording stays in the debug log; the client gets the protocol's words.
      if (deps.logger.isLevelEnabled("debug")) log().debug({ reason: decoded.reason }, "undecodable AgentClientMessage");
      throw invalidArgument(`The ${via} payload is not a valid agent.v1.AgentClientMessage (binary protobuf).`);
    }
    const ref = { tenantId: principal.tenantId, requestId };
    let enforced = false;
    if (!headers.ghostMode && deps.privacyEnforced) {
      try {
        enforced = await deps.privacyEnforced(principal.tenantId);
      } catch (err) {
        // Fail closed: without the tenant's policy the run's privacy mode is unknown.
        log().error({ err: err instanceof Error ? err.name : "unknown" }, `tenant policy unavailable for ${via}`);
        deps.metrics.bidiAppends.inc({ outcome: "unavailable" });
        throw unavailable("The gateway could not read the tenant's privacy policy; retry shortly.");
      }
    }
    // Who the run belongs to, stored with the entry (next to its trace context) for the worker.
    const runPrincipal: RunPrincipal = {
      userId: principal.userId,
      keyId: principal.keyId,
      originalRequestId: headers.originalRequestId,
      ghostMode: headers.ghostMode || enforced,
    };
    const producer = { kind: SpanKind.PRODUCER, attributes: { [ATTR.requestId]: requestId, [ATTR.messagingOperation]: "send" } };
    let outcome;
    let refused: ConnectError | undefined;
    try {
      // The bus entry's span: the worker's run span is its child.
      outcome = await withSpan(tracer, SPAN.busAppendInput, producer, async (s) => {
        const o = await deps.bus.appendInput(ref, seqno, payload, { trace: injectTraceContext(), principal: runPrincipal });
        s.setAttribute(ATTR.appendOutcome, o.status);
        return o;
      });
      const generation = outcome.generation;
      // A new run while too many wait for a worker: refused at once, and its generation ended with
      // the same status, so a reader already waiting for it gets the refusal too.
      const refusal = outcome.status === "accepted" && outcome.startedGeneration ? await deps.dispatcher.admit() : undefined;
      if (refusal) {
        const error = overloaded(
          `The gateway's workers are all busy (${refusal.waiting} runs already wait for one; GATEWAY_MAX_WAITING_RUNS is ${refusal.limit}); retry in a few seconds.`,
        );
        error.metadata.set("retry-after", String(ADMISSION_RETRY_AFTER_S));
        await endGeneration(deps.bus, ref, generation, error);
        refused = error;
      } else if ((outcome.status === "accepted" && outcome.startedGeneration) || outcome.status === "duplicate") {
        // The append that started the generation dispatches its run. A duplicate re-dispatches
        // (idempotent per (request, generation): a no-op while the job exists): it is the
        // client's retry of an append whose dispatch failed, or whose ingress died between
        // the bus append and the dispatch, or a Run reconnecting with its run_request, and
        // so the only way such a run still starts. Any other append joins a generation whose
        // starting append was dispatched, or was answered `unavailable` and is retried.
        // The job carries its dispatch span's context; the run span links to it.
        await withSpan(tracer, SPAN.jobDispatch, producer, (s) => {
          s.setAttribute(ATTR.generation, generation);
          return deps.dispatcher.dispatch(ref, generation, injectTraceContext());
        });
      }
    } catch (err) {
      log().error({ err }, `bus unavailable for ${via}`);
      deps.metrics.bidiAppends.inc({ outcome: "unavailable" });
      throw unavailable("The gateway could not record the append (its message bus is unavailable); retry shortly.");
    }
    if (refused) {
      deps.metrics.bidiAppends.inc({ outcome: "overloaded" });
      throw refused;
    }
    deps.metrics.bidiAppends.inc({ outcome: outcome.status });
    trace.getActiveSpan()?.setAttribute(ATTR.appendOutcome, outcome.status);
    if (outcome.status === "beyond_window") {
      throw invalidArgument(`append_seqno ${seqno} is more than ${outcome.window} ahead of the next expected seqno ${outcome.nextSeqno} for this request.`);
    }
    if (outcome.status === "input_full") {
      throw resourceExhausted(`This run already received ${outcome.limit} messages, the gateway's limit for one run.`);
    }
    if (deps.logger.isLevelEnabled("debug")) {
      log().debug({ seqno: String(seqno), outcome: outcome.status, generation: outcome.generation, via, ...loggableHeaders(headers) }, "append");
    }
  };
}

/**
 * BidiAppend: validate, pass the seqno gate, dispatch the run. Answers once the append is
 * durably recorded (also when buffered ahead of a gap); never waits for the run.
 */
export function createBidiAppendHandler(deps: BidiAppendDeps) {
  const append = createClientAppender(deps);
  return async (req: BidiAppendRequest, ctx: HandlerContext): Promise<BidiAppendResponse> => {
    const principal = await principalOf(ctx, deps.auth, deps.logger);
    const requestId = req.requestId?.requestId ?? "";
    if (!requestId) throw invalidArgument("BidiAppend needs `request_id.request_id`.");
    const headers = readClientHeaders(ctx.requestHeader);
    return withSpan(
      tracer,
      SPAN.bidiAppend,
      { kind: SpanKind.SERVER, attributes: { [ATTR.tenantId]: principal.tenantId, [ATTR.requestId]: requestId, [ATTR.appendSeqno]: Number(req.appendSeqno) } },
      async () => {
        await append(principal, headers, requestId, req.appendSeqno, payloadOf(req, deps.limits.maxPayloadBytes), "BidiAppend");
        return create(BidiAppendResponseSchema, {});
      },
    );
  };
}
