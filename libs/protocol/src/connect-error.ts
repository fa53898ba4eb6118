import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeFromString, codeToString } from "@connectrpc/connect/protocol-connect";
import { CustomErrorDetailsSchema, encodeEndStream, ErrorDetailsSchema, type ConnectCodeName } from "@byok/wire";
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

/** A Connect code name (`invalid_argument` …) as its Code; anything else is `unknown`. */
export function connectCode(name: string | undefined): Code {
  return (name === undefined ? undefined : codeFromString(name)) ?? Code.Unknown;
}

/**
 * The end-stream envelope of a stream ending with `err` (`{}` without one): its code, raw
 * message and aiserver.v1.ErrorDetails, through the one encoder in @byok/wire.
 */
export function endStreamFor(err: ConnectError | undefined): Uint8Array {
  if (!err) return encodeEndStream();
  const errorDetails: Uint8Array[] = [];
  for (const d of err.details) {
    if ("desc" in d) {
      if (d.desc.typeName === ErrorDetailsSchema.typeName) errorDetails.push(toBinary(ErrorDetailsSchema, create(ErrorDetailsSchema, d.value)));
    } else if (d.type === ErrorDetailsSchema.typeName) {
      errorDetails.push(d.value);
    }
  }
  return encodeEndStream({ code: codeToString(err.code) as ConnectCodeName, message: err.rawMessage, errorDetails });
}

/**
 * The end-stream envelope of a stored end (code name, message, serialized ErrorDetails): the
 * stored ErrorDetails bytes are forwarded as they are, never decoded and re-encoded.
 */
export function storedEndStream(code: string | undefined, message: string | undefined, errorDetails: Uint8Array | undefined): Uint8Array {
  return encodeEndStream({ code: codeToString(connectCode(code)) as ConnectCodeName, message: message ?? "The run failed.", errorDetails: errorDetails ? [errorDetails] : [] });
}
