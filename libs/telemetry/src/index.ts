// Public surface of @byok/telemetry: secret-proof logging, the Prometheus metric catalogue,
// OpenTelemetry bootstrap (services) and in-memory tracing (tests), trace-context carriers.
export { createLogger, type Logger, type LoggerOptions } from "./log/logger.js";
export { createSecretSet, processSecrets, registerSecret, REDACTED, MIN_SECRET_LENGTH, type SecretSet } from "./secrets/secret-set.js";
export { scrubText } from "./secrets/patterns.js";
export { scrubSecrets, type ScrubOptions, type ScrubbedError } from "./secrets/scrub.js";
export { isSecretKey } from "./secrets/secret-keys.js";
export {
  createMetrics,
  metricsHandler,
  type GatewayMetrics,
  type MetricsOptions,
  type MetricsResponse,
  type AppendOutcome,
  type Dependency,
  type FencedWrite,
  type OverheadStage,
  type QueueState,
  type RefusalReason,
  type TokenKind,
} from "./metrics/metrics.js";
export { boundedLabel, OTHER_LABEL } from "./metrics/bounded-label.js";
export { SPAN, SPAN_EVENT, ATTR, GENAI, GENAI_OPERATION, genAiSpanName, type SpanName, type GenAiOperation } from "./tracing/span-names.js";
export { injectTraceContext, extractTraceContext, type TraceCarrier } from "./tracing/propagation.js";
export { withSpan } from "./tracing/with-span.js";
export { createScrubbingSpanProcessor } from "./tracing/scrub-processor.js";
export { createMemoryTracing, type MemoryTracing } from "./tracing/memory.js";
export { startTelemetry, type Telemetry, type TelemetryOptions, type TraceExporterKind } from "./tracing/start.js";
export { startServiceTracing, type ServiceTracingConfig, type SpanLine } from "./tracing/service.js";
