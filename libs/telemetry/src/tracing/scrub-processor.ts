import type { AttributeValue, Attributes } from "@opentelemetry/api";
import type { Context } from "@opentelemetry/api";
import type { ReadableSpan, Span, SpanProcessor } from "@opentelemetry/sdk-trace";
import { scrubText } from "../secrets/patterns.js";
import { isSecretKey } from "../secrets/secret-keys.js";
import { processSecrets, REDACTED, type SecretSet } from "../secrets/secret-set.js";

/**
 * A span processor that runs in `onEnding` (before the span is frozen and handed to exporting
 * processors registered after it) and removes secrets from the span name, attributes, status
 * message and event attributes (e.g. `exception.message` / `exception.stacktrace` recorded from
 * an error that quoted a key): values under secret key names become `[REDACTED]`, strings are
 * scrubbed of registered secrets and provider-key patterns. Register it before the exporter's
 * processor.
 */
export function createScrubbingSpanProcessor(secrets: SecretSet = processSecrets): SpanProcessor {
  const scrubValue = (key: string, v: AttributeValue | undefined): AttributeValue | undefined => {
    if (v === undefined) return v;
    if (isSecretKey(key) || isSecretKey(key.split(".").pop() ?? key)) return REDACTED;
    if (typeof v === "string") return scrubText(v, secrets);
    if (Array.isArray(v)) return v.map((item) => (typeof item === "string" ? scrubText(item, secrets) : item)) as AttributeValue;
    return v;
  };
  const scrubAttributes = (attrs: Attributes): void => {
    for (const key of Object.keys(attrs)) {
      const before = attrs[key];
      const after = scrubValue(key, before);
      if (after !== before) attrs[key] = after;
    }
  };
  return {
    onStart(_span: Span, _ctx: Context): void {},
    onEnding(span: Span): void {
      const name = scrubText(span.name, secrets);
      if (name !== span.name) span.updateName(name);
      for (const [key, value] of Object.entries(span.attributes)) {
        const after = scrubValue(key, value);
        if (after !== value && after !== undefined) span.setAttribute(key, after);
      }
      if (span.status.message) span.setStatus({ ...span.status, message: scrubText(span.status.message, secrets) });
      // Events are frozen neither by type nor at runtime; scrub their attribute objects in place.
      for (const event of span.events) {
        if (event.attributes) scrubAttributes(event.attributes as Attributes);
      }
    },
    onEnd(_span: ReadableSpan): void {},
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}
