import { create, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { CustomErrorDetailsSchema, ErrorDetails_Error, ErrorDetailsSchema, type ConnectCodeName } from "@byok/wire";

const CODES: Record<ConnectCodeName, Code> = {
  canceled: Code.Canceled,
  unknown: Code.Unknown,
  invalid_argument: Code.InvalidArgument,
  deadline_exceeded: Code.DeadlineExceeded,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  permission_denied: Code.PermissionDenied,
  resource_exhausted: Code.ResourceExhausted,
  failed_precondition: Code.FailedPrecondition,
  aborted: Code.Aborted,
  out_of_range: Code.OutOfRange,
  unimplemented: Code.Unimplemented,
  internal: Code.Internal,
  unavailable: Code.Unavailable,
  data_loss: Code.DataLoss,
  unauthenticated: Code.Unauthenticated,
};

export function connectCode(name: string | undefined): Code {
  return CODES[(name ?? "unknown") as ConnectCodeName] ?? Code.Unknown;
}

/**
 * A Connect error carrying aiserver.v1.ErrorDetails{CustomErrorDetails{title, detail}}, as every
 * error the gateway sends does (PROTOCOL.md). `message` must be safe for users.
 */
export function gatewayError(code: Code, error: ErrorDetails_Error, title: string, message: string, isRetryable = false): ConnectError {
  return new ConnectError(message, code, undefined, [
    {
      desc: ErrorDetailsSchema,
      value: create(ErrorDetailsSchema, {
        error,
        details: create(CustomErrorDetailsSchema, { title, detail: message, isRetryable }),
      }),
    },
  ]);
}

/** The end of a stream as the bus stored it, as a Connect error. */
export function endStatusError(code: string | undefined, message: string | undefined, errorDetails: Uint8Array | undefined): ConnectError {
  const details = errorDetails ? [{ desc: ErrorDetailsSchema, value: fromBinary(ErrorDetailsSchema, errorDetails) }] : [];
  return new ConnectError(message ?? "The run failed.", connectCode(code), undefined, details);
}

export const invalidArgument = (message: string) =>
  gatewayError(Code.InvalidArgument, ErrorDetails_Error.BAD_REQUEST, "Invalid request", message);
export const resourceExhausted = (message: string) =>
  gatewayError(Code.ResourceExhausted, ErrorDetails_Error.RESOURCE_EXHAUSTED, "Limit exceeded", message);
export const unavailable = (message: string) =>
  gatewayError(Code.Unavailable, ErrorDetails_Error.INTERNAL, "Gateway temporarily unavailable", message, true);
export const notFound = (message: string) =>
  gatewayError(Code.NotFound, ErrorDetails_Error.NOT_FOUND, "Request not found", message);
