// The end-stream the edge writes for a Connect error is the one connect-es writes for it (the
// client parses it with connect-es), and a stored end is forwarded with its ErrorDetails bytes.
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { endStreamToJson } from "@connectrpc/connect/protocol-connect";
import { describe, expect, it } from "vitest";
import { CustomErrorDetailsSchema, ErrorDetails_Error, ErrorDetailsSchema, parseEndStream } from "@byok/wire";
import { connectErrorFor, endStreamFor, storedEndStream } from "../src/index.js";

const json = (envelope: Uint8Array) => JSON.parse(new TextDecoder().decode(envelope.subarray(5))) as Record<string, unknown>;

/** connect-es's end-stream JSON without its optional `debug` copy of each detail. */
function connectEs(err: ConnectError | undefined): unknown {
  const es = endStreamToJson(new Headers(), err, undefined) as { error?: { details?: { debug?: unknown }[] } };
  for (const d of es.error?.details ?? []) delete d.debug;
  return es;
}

describe("end-stream of a Connect error", () => {
  it("equals connect-es's end-stream JSON for `{}`, catalogue errors and errors without details", () => {
    expect(json(endStreamFor(undefined))).toEqual(connectEs(undefined));
    const errors = [
      connectErrorFor({ kind: "bad_request", message: "The RunSSE request is empty." }),
      connectErrorFor({ kind: "limit_exceeded", message: "over the limit" }),
      new ConnectError("plain", Code.Unavailable),
      new ConnectError("", Code.Canceled),
    ];
    for (const err of errors) expect(json(endStreamFor(err))).toEqual(connectEs(err));
  });

  it("forwards a stored end's ErrorDetails bytes unchanged and names an unknown stored code `unknown`", () => {
    const detail = toBinary(ErrorDetailsSchema, create(ErrorDetailsSchema, {
      error: ErrorDetails_Error.PROVIDER_ERROR,
      details: create(CustomErrorDetailsSchema, { title: "Provider error", detail: "upstream 503", isRetryable: true }),
    }));
    const stored = parseEndStream(storedEndStream("unavailable", "upstream 503", detail).subarray(5));
    expect(stored).toMatchObject({ ok: false, code: "unavailable", message: "upstream 503" });
    if (!stored.ok) expect(toBinary(ErrorDetailsSchema, stored.errorDetails[0]!)).toEqual(detail);
    expect(parseEndStream(storedEndStream("no_such_code", undefined, undefined).subarray(5))).toMatchObject({ ok: false, code: "unknown", errorDetails: [] });
  });
});
