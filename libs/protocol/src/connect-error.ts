import { create, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeFromString } from "@connectrpc/connect/protocol-connect";
import { CustomErrorDetailsSchema, ErrorDetailsSchema } from "@byok/wire";
import { endFor, type GatewayError } from "./errors.js";

/**
 * The catalogue's error as a Connect error (unary replies and thrown handler errors), with its
 * aiserver.v1.ErrorDetails{CustomErrorDetails{title, detail}} as every gateway error carries.
 */
export function connectErrorFor(err: GatewayError): ConnectError {
  const d = endFor(err);
  const detail = d.detail!;
  return new ConnectError(err.message, connectCode(d.code), undefined, [
    {
      desc: ErrorDetailsSchema,
      value: create(ErrorDetailsSchema, {
        error: detail.error,
        details: create(CustomErrorDetailsSchema, { title: detail.title, detail: detail.detail, isRetryable: detail.isRetryable }),
      }),
    },
  ]);
}

/** A stored end of a stream (code name, message, serialized ErrorDetails) as a Connect error. */
export function endStatusError(code: string | undefined, message: string | undefined, errorDetails: Uint8Array | undefined): ConnectError {
  const details = errorDetails ? [{ desc: ErrorDetailsSchema, value: fromBinary(ErrorDetailsSchema, errorDetails) }] : [];
  return new ConnectError(message ?? "The run failed.", connectCode(code), undefined, details);
}

/** A Connect code name (`invalid_argument` …) as its Code; anything else is `unknown`. */
export function connectCode(name: string | undefined): Code {
  return (name === undefined ? undefined : codeFromString(name)) ?? Code.Unknown;
}
