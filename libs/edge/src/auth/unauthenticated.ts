import type { ConnectError } from "@connectrpc/connect";
import { connectErrorFor } from "@byok/protocol";

/**
 * `unauthenticated` + ErrorDetails{ERROR_BAD_API_KEY}. `message` is safe for users: it never
 * quotes the presented credential.
 */
export function unauthenticated(message: string): ConnectError {
  return connectErrorFor({ kind: "gateway_auth", message });
}
