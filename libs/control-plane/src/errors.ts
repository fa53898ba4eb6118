import type { ConnectError } from "@connectrpc/connect";
import { connectErrorFor } from "@byok/protocol";

/** `unauthenticated`; an expired token says so (ERROR_AUTH_TOKEN_EXPIRED), so the client refreshes. */
export const tokenRefused = (message: string, expired = false): ConnectError =>
  connectErrorFor({ kind: expired ? "gateway_token_expired" : "gateway_auth", message });

export const notServed = (procedure: string): ConnectError =>
  connectErrorFor({
    kind: "not_served",
    message: `${procedure} is not served by this gateway (only the agent protocol and the control-plane calls listed in its README are).`,
  });
