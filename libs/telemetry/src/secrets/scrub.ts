import { scrubText } from "./patterns.js";
import { isSecretKey } from "./secret-keys.js";
import { processSecrets, REDACTED, type SecretSet } from "./secret-set.js";

export interface ScrubOptions {
  /** Registered values to remove (default: {@link processSecrets}). */
  secrets?: SecretSet;
  /** Depth beyond which objects are replaced by `[Object]` instead of walked (default 8). */
  maxDepth?: number;
  /** Array items kept per array; the rest are summarised (default 100). */
  maxArrayItems?: number;
}

/** A serialized error as it appears in scrubbed values and log lines (pino's `err` shape). */
export interface ScrubbedError {
  type: string;
  message: string;
  stack?: string;
  [key: string]: unknown;
}

/**
 * Returns a copy of `value` that cannot carry a secret:
 * - strings are scrubbed with {@link scrubText} (registered values + provider-key patterns);
 * - values under secret key names ({@link isSecretKey}) become `[REDACTED]`, whatever their type;
 * - Errors become `{type, message, stack, cause?, ...own props}`, each scrubbed;
 * - bytes become `[Uint8Array N bytes]` (raw protobuf may embed credentials);
 * - Maps become objects, Sets arrays; cycles become `[Circular]`;
 * - anything deeper than `maxDepth` becomes `[Object]` (bounded work, never an unscrubbed leak).
 * Pure: the input is not modified.
 */
export function scrubSecrets(value: unknown, options: ScrubOptions = {}): unknown {
  const secrets = options.secrets ?? processSecrets;
  const maxDepth = options.maxDepth ?? 8;
  const maxItems = options.maxArrayItems ?? 100;
  const seen = new WeakSet<object>();

  const walk = (v: unknown, depth: number): unknown => {
    switch (typeof v) {
      case "string":
        return scrubText(v, secrets);
      case "number":
      case "boolean":
      case "bigint":
      case "undefined":
        return v;
      case "symbol":
        return scrubText(v.toString(), secrets);
      case "function":
        return undefined;
    }
    if (v === null) return null;
    const obj = v as object;
    if (seen.has(obj)) return "[Circular]";
    if (depth >= maxDepth) return Array.isArray(obj) ? "[Array]" : "[Object]";
    if (obj instanceof Uint8Array) return `[${obj.constructor.name} ${obj.byteLength} bytes]`;
    if (obj instanceof ArrayBuffer) return `[ArrayBuffer ${obj.byteLength} bytes]`;
    if (obj instanceof Date) return Number.isNaN(obj.getTime()) ? "Invalid Date" : obj.toISOString();
    if (obj instanceof URL) return scrubText(obj.toString(), secrets);
    seen.add(obj);
    try {
      if (obj instanceof Error) return walkError(obj, depth);
      if (Array.isArray(obj)) {
        const out = obj.slice(0, maxItems).map((item) => walk(item, depth + 1));
        if (obj.length > maxItems) out.push(`[${obj.length - maxItems} more items]`);
        return out;
      }
      if (obj instanceof Map) {
        const out: Record<string, unknown> = {};
        for (const [k, item] of obj) out[scrubText(String(k), secrets)] = isSecretKey(String(k)) ? REDACTED : walk(item, depth + 1);
        return out;
      }
      if (obj instanceof Set) return walk([...obj], depth);
      const out: Record<string, unknown> = {};
      for (const [k, item] of Object.entries(obj)) out[k] = isSecretKey(k) ? REDACTED : walk(item, depth + 1);
      return out;
    } finally {
      seen.delete(obj);
    }
  };

  const walkError = (err: Error, depth: number): ScrubbedError => {
    const out: ScrubbedError = {
      type: err.constructor?.name ?? err.name ?? "Error",
      message: scrubText(String(err.message ?? ""), secrets),
    };
    if (typeof err.stack === "string") out.stack = scrubText(err.stack, secrets);
    for (const [k, item] of Object.entries(err)) {
      if (k === "message" || k === "stack") continue;
      out[k] = isSecretKey(k) ? REDACTED : walk(item, depth + 1);
    }
    if (err.cause !== undefined) out.cause = walk(err.cause, depth + 1);
    if (err instanceof AggregateError) out.errors = walk(err.errors, depth + 1);
    return out;
  };

  return walk(value, 0);
}
