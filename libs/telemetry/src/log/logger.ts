import { trace } from "@opentelemetry/api";
import { pino, type ChildLoggerOptions, type DestinationStream, type Level, type Logger } from "pino";
import { scrubText } from "../secrets/patterns.js";
import { scrubSecrets } from "../secrets/scrub.js";
import { PINO_REDACT_PATHS } from "../secrets/secret-keys.js";
import { processSecrets, REDACTED, type SecretSet } from "../secrets/secret-set.js";

export type { Logger } from "pino";

export interface LoggerOptions {
  /** `service` field on every line. */
  service: string;
  /** Minimum level (default `info`). */
  level?: Level | "silent";
  /** Where lines go (default: stdout, synchronous writes so a crash loses no line). Anything with `write(line: string)`. */
  destination?: DestinationStream;
  /** Registered secret values to remove (default: the process-wide {@link processSecrets}). */
  secrets?: SecretSet;
  /** Depth bound of the object walk (default 8); deeper objects are logged as `[Object]`. */
  maxDepth?: number;
}

/**
 * Creates a pino JSON logger that cannot write a secret. Four layers, each sufficient for its
 * class of leak:
 * 1. `redact` paths for the common fixed shapes (headers, `*.apiKey`, `*.credentials` ...);
 * 2. `formatters.log` / `formatters.bindings` (also on every child logger) walk every logged
 *    object and binding (bounded depth): values
 *    under secret key names at any depth become `[REDACTED]`, every string is scrubbed of
 *    registered secrets and provider-key patterns, Errors are serialized with scrubbed message
 *    and stack (and cause);
 * 3. `hooks.logMethod` scrubs the message string and its interpolation arguments;
 * 4. `hooks.streamWrite` scrubs the final line once more (registered values + patterns), so a
 *    secret registered after a child logger's bindings were serialized still never leaves.
 *
 * Every line written inside an active span carries its `trace_id`, `span_id` and `trace_flags`
 * (the OpenTelemetry log correlation fields), so logs and traces join.
 */
export function createLogger(options: LoggerOptions): Logger {
  const secrets = options.secrets ?? processSecrets;
  const scrubOpts = { secrets, maxDepth: options.maxDepth ?? 8 };
  const scrubObject = (o: object): Record<string, unknown> => {
    const out = scrubSecrets(o, scrubOpts);
    return out !== null && typeof out === "object" && !Array.isArray(out) ? (out as Record<string, unknown>) : {};
  };
  const logger = pino(
    {
      level: options.level ?? "info",
      base: { service: options.service },
      mixin: traceFields,
      redact: { paths: [...PINO_REDACT_PATHS], censor: REDACTED },
      // formatters.log has already turned errors into scrubbed plain objects; pino's default err
      // serializer would re-type them as "Object".
      serializers: { err: (e: unknown) => e },
      formatters: {
        log: scrubObject,
        bindings: scrubObject,
      },
      hooks: {
        logMethod(args, method) {
          const scrubbed = args.map((a: unknown) => (typeof a === "string" ? scrubText(a, secrets) : a));
          // A bare Error first argument: log it under `err` with its (scrubbed) message, as pino does.
          const first: unknown = scrubbed[0];
          if (first instanceof Error) {
            scrubbed[0] = { err: first };
            if (typeof scrubbed[1] !== "string") scrubbed.splice(1, 0, scrubText(first.message, secrets));
          }
          return method.apply(this, scrubbed as Parameters<typeof method>);
        },
        streamWrite: (line) => scrubText(line, secrets),
      },
    },
    options.destination ?? pino.destination({ fd: 1, sync: true }),
  );
  return guardChildren(logger, scrubObject);
}

/** The active span's ids, for log correlation; nothing outside a span (or with tracing off). */
function traceFields(): Record<string, unknown> {
  const sc = trace.getActiveSpan()?.spanContext();
  if (!sc || !trace.isSpanContextValid(sc)) return {};
  return { trace_id: sc.traceId, span_id: sc.spanId, trace_flags: `0${sc.traceFlags.toString(16)}`.slice(-2) };
}

type ObjectFormatter = (o: object) => Record<string, unknown>;
type ChildFn = (bindings: Record<string, unknown>, options?: ChildLoggerOptions) => Logger;

/**
 * pino resets `formatters.bindings` for child loggers, so child bindings would skip the object
 * walk: every `child()` (recursively) is given the scrubbing formatters again. A caller's own
 * `formatters.log` runs first, the scrubber last.
 */
function guardChildren(logger: Logger, scrub: ObjectFormatter): Logger {
  const child = logger.child.bind(logger) as unknown as ChildFn;
  const guarded: ChildFn = (bindings, options) => {
    const own = options?.formatters?.log;
    const formatters = { ...options?.formatters, bindings: scrub, log: own ? (o: object) => scrub(own(o)) : scrub };
    return guardChildren(child(bindings, { ...options, formatters }), scrub);
  };
  logger.child = guarded as unknown as Logger["child"];
  return logger;
}
