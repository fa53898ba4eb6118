import { request, type ClientRequest } from "node:http";
import { create, toBinary } from "@bufbuild/protobuf";
import { BidiRequestIdSchema, encodeEnvelope } from "@byok/wire";
import { RUN_SSE_PATH } from "./client.js";
import { cursorHeaders, type CursorIdentity } from "./headers.js";

/**
 * One RunSSE stream over node:http for a request that never comes, held (not read) until the
 * returned request is destroyed: memory and connection tests and benchmarks of waiting streams.
 * node:http, not fetch: undici cancels a fetch body it garbage-collects, which would close the
 * stream under the measurement. `agent: false`: a connection per stream, as Cursor's HTTP/1.1
 * clients hold one.
 */
export function holdIdleRunSse(baseUrl: string, requestId: string, identity: CursorIdentity = {}): ClientRequest {
  const body = encodeEnvelope(0, toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })));
  const req = request(`${baseUrl.replace(/\/+$/, "")}${RUN_SSE_PATH}`, {
    method: "POST",
    agent: false,
    headers: { ...cursorHeaders(requestId, identity), "content-type": "application/connect+proto", "content-length": String(body.byteLength) },
  });
  req.on("error", () => {});
  req.on("response", (res) => res.resume());
  req.end(body);
  return req;
}
