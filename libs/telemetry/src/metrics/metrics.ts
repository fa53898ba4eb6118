import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Outcome label of a BidiAppend: accepted, duplicate, or the Connect error code it was answered with. */
export type AppendOutcome = "accepted" | "duplicate" | "buffered" | "error";
/** End code label of a RunSSE stream: `ok` for `{}`, otherwise the Connect code, or `client_gone`. */
export type RunOutcome = "ok" | "canceled" | "error";
/** Token kinds metered per provider. */
export type TokenKind = "input" | "output" | "cache_read" | "cache_write" | "reasoning";

/**
 * The gateway's metric catalogue on a registry of its own (never prom-client's global default
 * registry, so two instances in one process or one test file never collide).
 *
 * Label values are fixed, low-cardinality vocabularies (outcome, provider kind, Connect code,
 * bus operation): never a key, a request id, a tenant-chosen string or any request text.
 */
export interface GatewayMetrics {
  readonly registry: Registry;
  /** BidiAppend calls by outcome. */
  readonly bidiAppends: Counter<"outcome">;
  /** Open RunSSE connections. */
  readonly runSseOpen: Gauge;
  /** Finished RunSSE streams by end-stream code (`ok` or a Connect code name). */
  readonly runSseStreams: Counter<"end_code">;
  /** AgentServerMessage frames written to RunSSE readers (heartbeats included). */
  readonly framesDelivered: Counter;
  readonly runsStarted: Counter<"outcome">;
  readonly runsEnded: Counter<"outcome">;
  /** Provider calls by provider kind (`openai`, `anthropic`, `azure`, `bedrock` ...) and outcome. */
  readonly providerAttempts: Counter<"provider" | "outcome">;
  /** Seconds from the provider request to its first streamed token. */
  readonly providerTtft: Histogram<"provider">;
  readonly tokens: Counter<"provider" | "kind">;
  /** Bus operations by operation name (`append_input`, `append_output`, `read` ...). */
  readonly busOps: Counter<"op">;
  /** Prometheus text exposition of every metric of this registry. */
  metrics(): Promise<string>;
  readonly contentType: string;
}

export interface MetricsOptions {
  /** Prefix of every metric name (default `byok_`). */
  prefix?: string;
  /** Collect Node process metrics (CPU, memory, event loop lag, GC) too (default true). */
  processMetrics?: boolean;
}

export function createMetrics(options: MetricsOptions = {}): GatewayMetrics {
  const p = options.prefix ?? "byok_";
  const registry = new Registry();
  const registers = [registry];
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: p });
  return {
    registry,
    bidiAppends: new Counter({ name: `${p}bidi_appends_total`, help: "BidiAppend calls by outcome", labelNames: ["outcome"], registers }),
    runSseOpen: new Gauge({ name: `${p}run_sse_open`, help: "Open RunSSE connections", registers }),
    runSseStreams: new Counter({ name: `${p}run_sse_streams_total`, help: "Finished RunSSE streams by end-stream code", labelNames: ["end_code"], registers }),
    framesDelivered: new Counter({ name: `${p}frames_delivered_total`, help: "AgentServerMessage frames written to RunSSE readers", registers }),
    runsStarted: new Counter({ name: `${p}runs_started_total`, help: "Runs started by outcome", labelNames: ["outcome"], registers }),
    runsEnded: new Counter({ name: `${p}runs_ended_total`, help: "Runs ended by outcome", labelNames: ["outcome"], registers }),
    providerAttempts: new Counter({ name: `${p}provider_attempts_total`, help: "Provider calls by provider and outcome", labelNames: ["provider", "outcome"], registers }),
    providerTtft: new Histogram({
      name: `${p}provider_ttft_seconds`,
      help: "Seconds from provider request to first streamed token",
      labelNames: ["provider"],
      buckets: [0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64],
      registers,
    }),
    tokens: new Counter({ name: `${p}tokens_total`, help: "Provider tokens by provider and kind", labelNames: ["provider", "kind"], registers }),
    busOps: new Counter({ name: `${p}bus_ops_total`, help: "Bus operations by operation", labelNames: ["op"], registers }),
    metrics: () => registry.metrics(),
    contentType: registry.contentType,
  };
}

/** What a `/metrics` route returns: status, content type and Prometheus text body. */
export interface MetricsResponse {
  status: number;
  contentType: string;
  body: string;
}

/**
 * A `/metrics` handler for any HTTP framework: `const r = await handler(); res.writeHead(r.status,
 * {"content-type": r.contentType}).end(r.body)`. Collection failures answer 500 with the error text.
 */
export function metricsHandler(source: Pick<GatewayMetrics, "registry"> | Registry): () => Promise<MetricsResponse> {
  const registry = source instanceof Registry ? source : source.registry;
  return async () => {
    try {
      return { status: 200, contentType: registry.contentType, body: await registry.metrics() };
    } catch (err) {
      return { status: 500, contentType: "text/plain; charset=utf-8", body: `metrics collection failed: ${(err as Error).message}\n` };
    }
  };
}
