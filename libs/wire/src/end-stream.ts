import { fromBinary } from "@bufbuild/protobuf";
import { ErrorDetailsSchema, type ErrorDetails } from "./gen/aiserver/v1/aiserver_pb.js";
import { encodeEnvelope, ENVELOPE_FLAG_END_STREAM } from "./envelope.js";

/** Connect error codes as they appear in end-stream JSON. */
export type ConnectCodeName =
  | "canceled" | "unknown" | "invalid_argument" | "deadline_exceeded" | "not_found"
  | "already_exists" | "permission_denied" | "resource_exhausted" | "failed_precondition"
  | "aborted" | "out_of_range" | "unimplemented" | "internal" | "unavailable"
  | "data_loss" | "unauthenticated";

/** A parsed end-stream frame: `ok` for `{}`, otherwise the error with its decoded ErrorDetails. */
export type EndStream =
  | { ok: true }
  | { ok: false; code: ConnectCodeName; message: string; errorDetails: ErrorDetails[] };

/**
 * Parses the JSON payload of an end-stream envelope (docs/protocol.md "Ending a stream").
 * Details of other types are skipped; `aiserver.v1.ErrorDetails` values (base64, padding optional)
 * are decoded.
 */
export function parseEndStream(payload: Uint8Array): EndStream {
  const json = JSON.parse(new TextDecoder().decode(payload)) as unknown;
  // Found by fuzzing: `null`, numbers or arrays are valid JSON but no end-stream.
  if (!isObject(json)) throw new SyntaxError("an end-stream payload must be a JSON object");
  const error = json.error;
  if (error === undefined || error === null) return { ok: true };
  if (!isObject(error)) throw new SyntaxError("an end-stream `error` must be a JSON object");
  const errorDetails: ErrorDetails[] = [];
  for (const d of Array.isArray(error.details) ? error.details : []) {
    if (isObject(d) && d.type === "aiserver.v1.ErrorDetails" && typeof d.value === "string") {
      errorDetails.push(fromBinary(ErrorDetailsSchema, Buffer.from(d.value, "base64")));
    }
  }
  return {
    ok: false,
    code: (typeof error.code === "string" ? error.code : "unknown") as ConnectCodeName,
    message: typeof error.message === "string" ? error.message : "",
    errorDetails,
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The error of an end-stream to write: a Connect code name, the message, serialized ErrorDetails. */
export interface EndStreamError {
  code: ConnectCodeName;
  message: string;
  /** Serialized `aiserver.v1.ErrorDetails`, forwarded as they are (base64 in the JSON). */
  errorDetails: readonly Uint8Array[];
}

const END_STREAM_OK = new TextEncoder().encode("{}");

/**
 * The end-stream envelope (flag 0x02) of a Connect stream (docs/protocol.md "Ending a stream"):
 * `{}` without an error, else `{"error":{code, message, details}}` with each ErrorDetails as
 * `{"type":"aiserver.v1.ErrorDetails","value":<base64, unpadded>}`, as connect-es writes it.
 * The one encoder of every stream's end; `parseEndStream` reads it back.
 */
export function encodeEndStream(error?: EndStreamError): Uint8Array {
  if (!error) return encodeEnvelope(ENVELOPE_FLAG_END_STREAM, END_STREAM_OK);
  const json: { code: string; message?: string; details?: { type: string; value: string }[] } = { code: error.code };
  if (error.message) json.message = error.message;
  if (error.errorDetails.length > 0) {
    json.details = error.errorDetails.map((d) => ({ type: ErrorDetailsSchema.typeName, value: Buffer.from(d).toString("base64").replace(/=+$/, "") }));
  }
  return encodeEnvelope(ENVELOPE_FLAG_END_STREAM, new TextEncoder().encode(JSON.stringify({ error: json })));
}
