import { GenerationGoneError } from "../errors.js";

/**
 * Redis could not be reached (or answered "try later"): the operation had no effect the
 * caller can rely on. The ingress answers `unavailable`; the worker ends or retries its run.
 */
export class BusUnavailableError extends Error {
  readonly code = "unavailable";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "BusUnavailableError";
  }
}

/** Reply errors that mean "the server cannot serve now", not "the command is wrong". */
const TRANSIENT_REPLY = /^(LOADING|BUSY|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|READONLY|NOREPLICAS|MOVED|ASK)\b/;

/** Maps an ioredis failure: connection-level and transient ones become BusUnavailableError. */
export function toBusError(err: unknown, what: string): Error {
  if (err instanceof BusUnavailableError || err instanceof GenerationGoneError) return err;
  if (err instanceof Error) {
    if (err.name === "ReplyError" && !TRANSIENT_REPLY.test(err.message)) return err;
    return new BusUnavailableError(`redis bus: ${what} failed: ${err.message}`, { cause: err });
  }
  return new BusUnavailableError(`redis bus: ${what} failed`, { cause: err });
}
