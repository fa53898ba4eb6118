import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { CustomErrorDetailsSchema, ErrorDetails_Error, ErrorDetailsSchema } from "@byok/wire";

/**
 * A Connect error with aiserver.v1.ErrorDetails{CustomErrorDetails{title, detail}}, like every
 * error the gateway sends. `message` must be safe for users: never a token or key.
 */
function detailed(code: Code, error: ErrorDetails_Error, title: string, message: string): ConnectError {
  return new ConnectError(message, code, undefined, [
    { desc: ErrorDetailsSchema, value: create(ErrorDetailsSchema, { error, details: create(CustomErrorDetailsSchema, { title, detail: message, isRetryable: false }) }) },
  ]);
}

/** `unauthenticated`; an expired token says so (ERROR_AUTH_TOKEN_EXPIRED), so the client refreshes. */
export const tokenRefused = (message: string, expired = false) =>
  detailed(Code.Unauthenticated, expired ? ErrorDetails_Error.AUTH_TOKEN_EXPIRED : ErrorDetails_Error.BAD_API_KEY, "Gateway authentication failed", message);

export const notServed = (procedure: string) =>
  detailed(
    Code.Unimplemented,
    ErrorDetails_Error.CUSTOM_MESSAGE,
    "Not served by the gateway",
    `${procedure} is not served by this gateway (only the agent protocol and the control-plane calls listed in its README are).`,
  );
