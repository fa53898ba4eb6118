import { BidiRequestIdSchema } from "@byok/wire";
import { invalidArgument } from "./errors.js";
import { checkedEnvelopes, requestCompression } from "./request-messages.js";

/** A RunSSE request is one envelope with a small BidiRequestId; a larger message is refused. */
export const MAX_RUN_SSE_MESSAGE = 64 * 1024;

const PROCEDURE = "agent.v1.AgentService/RunSSE";

/**
 * The request id of a RunSSE request body: exactly one Connect envelope (compressed only as
 * `connect-content-encoding` says) holding an agent.v1.BidiRequestId with a request id, read
 * and decoded once by the edge's request reader. Every other body is refused with a
 * ConnectError a person can act on, which the stream ends with.
 */
export async function readRunSseRequest(body: AsyncIterable<Uint8Array>, headers: Headers): Promise<string> {
  const rules = { input: BidiRequestIdSchema, binary: true, compression: requestCompression(headers, "connect-content-encoding"), readMaxBytes: MAX_RUN_SSE_MESSAGE, procedure: PROCEDURE };
  let requestId: string | undefined;
  for await (const { message } of checkedEnvelopes(body, rules)) {
    if (requestId !== undefined) throw invalidArgument(`A ${PROCEDURE} request is one envelope holding an agent.v1.BidiRequestId; this one sends more.`);
    requestId = message.requestId;
  }
  if (requestId === undefined) throw invalidArgument(`The ${PROCEDURE} request ended before its envelope (one agent.v1.BidiRequestId).`);
  if (!requestId) throw invalidArgument(`The ${PROCEDURE} BidiRequestId has an empty request_id.`);
  return requestId;
}
