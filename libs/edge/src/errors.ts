// The edge's refusals, from the one error catalogue (libs/protocol errors.ts). `message` must be
// safe for users: it never quotes a credential.
import { ConnectError } from "@connectrpc/connect";
import { connectErrorFor } from "@byok/protocol";

export const invalidArgument = (message: string) => connectErrorFor({ kind: "bad_request", message });
export const resourceExhausted = (message: string) => connectErrorFor({ kind: "limit_exceeded", message });
/** A momentary limit (load, not the request's own size): retry shortly or on another replica. */
export const overloaded = (message: string) => connectErrorFor({ kind: "overloaded", message });
export const unavailable = (message: string) => connectErrorFor({ kind: "gateway_unavailable", message });
export const notFound = (message: string) => connectErrorFor({ kind: "request_not_found", message });

/**
 * How a stream ends after `err`: the gateway's own refusals as they are; anything else (a bug)
 * a plain `internal`, the thrower's wording (a driver's query text …) kept for the log only.
 */
export function streamError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  return connectErrorFor({ kind: "internal", message: "The gateway hit an internal error serving this stream; please retry." });
}
