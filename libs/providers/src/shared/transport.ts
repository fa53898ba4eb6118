import { ProviderError, type Usage } from "@byok/protocol";
import { safeCause } from "./redact.js";
import { safeMessage, vendorError, type VendorFailure } from "./classify.js";
import { parseRetryAfter } from "./retry-after.js";
import { addressRefusal } from "./address-guard.js";

/** The first `code` (ECONNREFUSED, UND_ERR_SOCKET…) along an error's cause chain: safe to show, useful to act on. */
export function transportCode(err: unknown): string | undefined {
  let cur: unknown = err;
  for (let depth = 0; depth < 6 && cur; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === "string" && /^[A-Z][A-Z0-9_]+$/.test(code)) return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/** True for errors that mean the JSON inside a stream event could not be parsed. */
export function isMalformedStreamError(err: unknown): boolean {
  return err instanceof SyntaxError || (err instanceof Error && /malformed|could not parse|unexpected token|invalid json|checksum/i.test(err.message));
}

export interface FailureContext {
  /** Human name of the upstream in messages ("OpenAI", "Anthropic", "the OpenAI-compatible endpoint"). */
  provider: string;
  signal: AbortSignal;
  /** Values that must never show up in messages or causes (API keys, AWS secrets). */
  secrets: readonly (string | undefined)[];
  partialUsage?: Usage | undefined;
}

export function cancelledError(ctx: FailureContext, cause?: unknown): ProviderError {
  return new ProviderError("cancelled", safeMessage("cancelled", ctx.provider), {
    cause: cause === undefined ? undefined : safeCause(cause, ctx.secrets),
    partialUsage: ctx.partialUsage,
  });
}

export function networkError(ctx: FailureContext, cause: unknown, what?: string): ProviderError {
  const refused = addressRefusal(cause);
  if (refused) return new ProviderError("address_refused", safeMessage("address_refused", ctx.provider, { detail: refused.message }));
  const code = transportCode(cause);
  const detail = what ?? code;
  return new ProviderError("network", safeMessage("network", ctx.provider, detail ? { detail } : {}), {
    cause: safeCause(cause, ctx.secrets),
    partialUsage: ctx.partialUsage,
  });
}

export function malformedError(ctx: FailureContext, cause: unknown): ProviderError {
  return new ProviderError("malformed_stream", safeMessage("malformed_stream", ctx.provider), {
    cause: safeCause(cause, ctx.secrets),
    partialUsage: ctx.partialUsage,
  });
}

export function timeoutError(ctx: FailureContext, cause: unknown): ProviderError {
  return new ProviderError("timeout", safeMessage("timeout", ctx.provider), {
    cause: safeCause(cause, ctx.secrets),
    partialUsage: ctx.partialUsage,
  });
}

/** A stream that ended (cleanly at the TCP level) before the vendor's completion marker. */
export function truncatedStreamError(ctx: FailureContext): ProviderError {
  return new ProviderError("network", safeMessage("network", ctx.provider, { detail: "the stream ended before the response was complete" }), {
    partialUsage: ctx.partialUsage,
  });
}

/** The SDK client could not even be built from the target (bad base URL and the like): a route/credential problem. */
export function configurationError(provider: string, cause: unknown, secrets: readonly (string | undefined)[]): ProviderError {
  return new ProviderError("invalid_request", `The configuration for ${provider} is invalid; check the route's base URL and credentials`, {
    cause: safeCause(cause, secrets),
  });
}

/**
 * The common shape of every streamed pass: open the vendor stream, feed each vendor event to
 * the decoder, map any SDK failure through the API's error mapping, and report an abort as a
 * cancel (the streams end silently when the request is aborted). The stream hands events over
 * in batches, one per network chunk for the SSE reader (shared/sse.ts), so a chunk's events
 * cost one async step, not one each. `onOpen` runs once the response started (failures after
 * it carry partial usage). API-specific completion checks (finish reason, terminal event) stay
 * with the caller.
 */
export async function* pumpVendorStream<E, O>(opts: {
  open: () => PromiseLike<AsyncIterable<readonly E[]> | Iterable<readonly E[]>>;
  decode: (event: E) => Iterable<O>;
  mapError: (err: unknown) => ProviderError;
  signal: AbortSignal;
  cancelled: () => ProviderError;
  onOpen: () => void;
}): AsyncGenerator<O> {
  if (opts.signal.aborted) throw opts.cancelled();
  let stream: AsyncIterable<readonly E[]> | Iterable<readonly E[]>;
  try {
    stream = await opts.open();
  } catch (err) {
    throw opts.mapError(err);
  }
  opts.onOpen();
  try {
    read: for await (const batch of stream) {
      for (const ev of batch) {
        // A plain loop: `yield*` over the decoder's array would add an async-from-sync step per event.
        for (const out of opts.decode(ev)) yield out;
        // The consumer may abort while an event is out: the rest of the chunk is not decoded.
        if (opts.signal.aborted) break read;
      }
    }
  } catch (err) {
    throw opts.mapError(err);
  }
  if (opts.signal.aborted) throw opts.cancelled();
}

/** An SDK stream that yields events one by one, as batches of one (Bedrock's AWS event stream). */
export async function* eachAsBatch<E>(events: AsyncIterable<E>): AsyncGenerator<readonly E[]> {
  for await (const ev of events) yield [ev];
}

/** A class of error an SDK throws (matched with instanceof). */
type ErrorClass<E> = abstract new (...args: never[]) => E;

/**
 * The error classes of a Stainless-generated SDK (`openai`, `@anthropic-ai/sdk`): each its
 * own classes, the same hierarchy (a timeout is a connection error is an API error).
 */
export interface SdkErrorClasses<A extends { status: number | undefined; headers?: Headers | undefined }> {
  userAbort: ErrorClass<unknown>;
  timeout: ErrorClass<unknown>;
  connection: ErrorClass<unknown>;
  api: ErrorClass<A>;
}

/**
 * Maps anything an SDK throws to a ProviderError, in the one order every adapter uses: a caller
 * abort wins over whatever the SDK made of it; then timeouts and connection failures by type;
 * API errors classified from the status and what `fields` reads of the vendor's body; a stream
 * that could not be parsed; anything else is a network failure.
 */
export function mapSdkError<A extends { status: number | undefined; headers?: Headers | undefined }>(
  err: unknown,
  ctx: FailureContext,
  sdk: SdkErrorClasses<A>,
  fields: (err: A) => Omit<VendorFailure, "status" | "retryAfterMs">,
  now: () => number,
): ProviderError {
  if (err instanceof ProviderError) return err;
  if (ctx.signal.aborted || err instanceof sdk.userAbort) return cancelledError(ctx, err);
  if (err instanceof sdk.timeout) return timeoutError(ctx, err);
  if (err instanceof sdk.connection) return networkError(ctx, err);
  if (err instanceof sdk.api) {
    return vendorError({ status: err.status, ...fields(err), retryAfterMs: parseRetryAfter(err.headers, now) }, ctx.provider, ctx.secrets, err, ctx.partialUsage);
  }
  if (isMalformedStreamError(err)) return malformedError(ctx, err);
  return networkError(ctx, err);
}
