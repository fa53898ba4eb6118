import { Code, type ConnectError } from "@connectrpc/connect";
import { ErrorDetails_Error } from "@byok/wire";
import { gatewayError } from "../errors.js";

/**
 * `unauthenticated` + ErrorDetails{ERROR_BAD_API_KEY}. `message` is safe for users: it never
 * quotes the presented credential.
 */
export function unauthenticated(message: string): ConnectError {
  return gatewayError(Code.Unauthenticated, ErrorDetails_Error.BAD_API_KEY, "Gateway authentication failed", message);
}
