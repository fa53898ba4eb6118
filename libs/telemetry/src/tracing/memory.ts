import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from "@opentelemetry/core";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { processSecrets, type SecretSet } from "../secrets/secret-set.js";
import { createScrubbingSpanProcessor } from "./scrub-processor.js";

export interface MemoryTracing {
  /** Finished spans, exported synchronously on `span.end()` (scrubbed of secrets first). */
  readonly exporter: InMemorySpanExporter;
  /** Flushes, shuts the provider down and removes every global registration made here. */
  shutdown(): Promise<void>;
}

/**
 * Test tracing: a tracer provider with the secret-scrubbing processor and a synchronous
 * in-memory exporter, registered globally together with an AsyncLocalStorage context manager
 * and the W3C trace-context (+ baggage) propagator, so code using only `@opentelemetry/api`
 * produces real, linked spans, also through tracers taken at module load. Any previous global
 * registration is replaced (a test file that forgot to shut down cannot break the next one);
 * call `shutdown()` in `afterAll`.
 */
export function createMemoryTracing(options: { secrets?: SecretSet } = {}): MemoryTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({
    spanProcessors: [createScrubbingSpanProcessor(options.secrets ?? processSecrets), new SimpleSpanProcessor({ exporter })],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.disable();
  propagation.disable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));
  // Tracers taken at module load (`trace.getTracer` at the top of a file) hang on the API's
  // first proxy provider: register onto it when nothing is registered yet, so they record too.
  // `trace.disable()` would replace that proxy and leave them no-op.
  if (!trace.setGlobalTracerProvider(provider)) {
    trace.disable();
    trace.setGlobalTracerProvider(provider);
  }
  let done: Promise<void> | undefined;
  return {
    exporter,
    shutdown() {
      done ??= (async () => {
        await provider.forceFlush();
        await provider.shutdown();
        trace.disable();
        propagation.disable();
        context.disable();
      })();
      return done;
    },
  };
}
