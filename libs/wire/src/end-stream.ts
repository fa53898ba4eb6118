import { fromBinary } from "@bufbuild/protobuf";
import { ErrorDetailsSchema, type ErrorDetails } from "./gen/aiserver/v1/aiserver_pb.js";

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
 * Parses the JSON payload of an end-stream envelope (PROTOCOL.md "Ending a stream").
 * Details of other types are skipped; `aiserver.v1.ErrorDetails` values (base64, padding optional)
 * are decoded.
 */
export function parseEndStream(payload: Uint8Array): EndStream {
  const json = JSON.parse(new TextDecoder().decode(payload)) as {
    error?: { code?: string; message?: string; details?: { type?: string; value?: string }[] };
  };
  if (!json.error) return { ok: true };
  const errorDetails: ErrorDetails[] = [];
  for (const d of json.error.details ?? []) {
    if (d.type === "aiserver.v1.ErrorDetails" && typeof d.value === "string") {
      errorDetails.push(fromBinary(ErrorDetailsSchema, Buffer.from(d.value, "base64")));
    }
  }
  return {
    ok: false,
    code: (json.error.code ?? "unknown") as ConnectCodeName,
    message: json.error.message ?? "",
    errorDetails,
  };
}
