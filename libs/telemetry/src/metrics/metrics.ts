import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { boundedLabel } from "./bounded-label.js";

/**
 * Outcome label of a BidiAppend: the bus outcome, `unavailable` when the bus could not record it,
 * or `overloaded` for a new run refused past GATEWAY_MAX_WAITING_RUNS.
 */
export type AppendOutcome = "accepted" | "duplicate" | "buffered" | "beyond_window" | "input_full" | "unavailable" | "overloaded";
/** Token kinds metered per provider, normalized as in the ledger (input excludes cache reads and writes). */
export type TokenKind = "input" | "output" | "cache_read" | "cache_write" | "reasoning";
/** Why a run or an attempt was refused before reaching a provider. */
export type RefusalReason = "budget_exhausted" | "rate_limited";
/**
 * A write refused for a stale fencing epoch: on the bus (`append_output`, `end_output`,
 * `snapshot`) or in the store (`claim`, `store` for history and checkpoints, `ledger`).
 */
export type FencedWrite = "append_output" | "end_output" | "snapshot" | "claim" | "store" | "ledger";
/** Where gateway overhead is measured (docs/observability.md). */
export type OverheadStage = "provider_to_bus" | "bus_to_client";
/** Queue job states reported by the queue depth gauge. */
export type QueueState = "waiting" | "active" | "delayed" | "prioritized";
/** External systems a process depends on, as reported by `byok_dependency_up`. */
export type Dependency = "redis" | "postgres";

/** GenAI semantic-convention labels, in Prometheus form. */
type GenAiLabels = "gen_ai_operation_name" | "gen_ai_provider_name" | "gen_ai_request_model" | "gen_ai_response_model" | "tenant";

/**
 * The gateway's metric catalogue (docs/observability.md lists every name with where it moves),
 * on a registry of its own (never prom-client's global default registry, so two instances in
 * one process or one test file never collide).
 *
 * Labels are bounded: fixed vocabularies (outcome, provider kind, Connect code, stage), model
 * names capped at `maxModelLabels` distinct values (then `other`), and a `tenant` label only
 * when `tenantLabel` is on (capped the same way). Never a key, a request id or request text.
 */
export interface GatewayMetrics {
  readonly registry: Registry;
  // ---- edge (ingress / embedded gateway) ----
  /** BidiAppend calls by outcome ({@link AppendOutcome}). */
  readonly bidiAppends: Counter<"outcome">;
  /** Open RunSSE connections. */
  readonly runSseOpen: Gauge;
  /** TCP connections the edge holds (counted against GATEWAY_MAX_CONNECTIONS). */
  readonly connectionsOpen: Gauge;
  /** Connections past GATEWAY_MAX_CONNECTIONS (answered `resource_exhausted`, then closed). */
  readonly connectionsRefused: Counter;
  /** Finished RunSSE streams by end-stream code (`ok`, a Connect code name, or `client_gone`). */
  readonly runSseStreams: Counter<"end_code">;
  /** AgentServerMessage frames written to RunSSE readers (heartbeats included). */
  readonly framesDelivered: Counter;
  /** Control-plane (aiserver.v1 and /v1/models) calls by procedure and Connect code. */
  readonly controlPlaneCalls: Counter<"procedure" | "code">;
  /** `/aiserver.v1.*` procedures answered `unimplemented`, by procedure (at most 200 names, then `other`). */
  readonly unimplementedProcedures: Counter<"procedure">;
  /** AnalyticsService/TrackEvents events accepted (counted, never stored). */
  readonly analyticsEvents: Counter;
  /** Session token grants by grant (`api_key`, `refresh`, `oauth_refresh`) and outcome (`issued`, `refused`). */
  readonly sessionTokens: Counter<"grant" | "outcome">;
  /** Client `/v1/traces` exports by outcome (`forwarded`, `dropped`). */
  readonly clientTraceExports: Counter<"outcome">;
  /** Admin API requests answered, by route pattern (`METHOD /path/:param`, or `unmatched`) and HTTP status. */
  readonly adminRequests: Counter<"route" | "status">;
  // ---- runs (worker / embedded gateway) ----
  /** Ledger rows that went through the spool during a database outage, by outcome (`held`, `recorded`, `lost`). */
  readonly ledgerSpoolRows: Counter<"outcome">;
  /** Generations started by this process (takeovers not included). */
  readonly runsStarted: Counter<"tenant">;
  /** Generations ended by this process, by end code (`ok` or the Connect code). */
  readonly runsEnded: Counter<"code" | "tenant">;
  /** Generations executing in this process now. */
  readonly runsActive: Gauge;
  /** Generations this process took over from a previous owner's snapshot. */
  readonly takeovers: Counter;
  /** Bus writes refused by the fencing epoch (another worker owns the run). */
  readonly fencedWrites: Counter<"op">;
  /** Runs and attempts refused by budgets or rate limits. */
  readonly refusals: Counter<"reason" | "tenant">;
  /** Provider attempts retried or failed over, by the error kind that caused it. */
  readonly providerRetries: Counter<"provider" | "reason" | "action">;
  /** Provider tokens by provider kind and normalized kind, as each ledger row records them. */
  readonly tokens: Counter<"provider" | "kind" | "tenant">;
  /** USD charged by ledger rows (gateway credentials on priced models; client keys cost 0). */
  readonly cost: Counter<"provider" | "gen_ai_request_model" | "tenant">;
  // ---- run queue (distributed) ----
  /** Run jobs in the queue by state, read from `queueDepthFrom`'s source on every scrape. */
  readonly queueDepth: Gauge<"state">;
  /** Where the queue depth gauge reads its counts (a worker's queue); unset, the gauge stays empty. */
  queueDepthFrom(source: () => Promise<Record<QueueState, number>>): void;
  /** Seconds a run job waited in the queue before a worker started it. */
  readonly queueWait: Histogram;
  // ---- GenAI semantic conventions (Prometheus form) ----
  /** `gen_ai.client.token.usage`: tokens per provider call, `gen_ai_token_type` input|output. */
  readonly genAiTokenUsage: Histogram<GenAiLabels | "gen_ai_token_type">;
  /** `gen_ai.client.operation.duration`, with `error_type` on failures. */
  readonly genAiOperationDuration: Histogram<GenAiLabels | "error_type">;
  /** `gen_ai.client.operation.time_to_first_chunk`. */
  readonly genAiTimeToFirstChunk: Histogram<GenAiLabels>;
  /** `gen_ai.client.operation.time_per_output_chunk`: between consecutive chunks after the first. */
  readonly genAiTimePerOutputChunk: Histogram<GenAiLabels>;
  // ---- gateway overhead ----
  /**
   * Seconds the gateway adds: `provider_to_bus` from a provider attempt's first chunk to its
   * first frame appended to the bus; `bus_to_client` from a frame's append to its bytes being
   * written to a live RunSSE reader.
   */
  readonly overhead: Histogram<"stage">;
  // ---- dependencies ----
  /** 1 when this process reached the dependency at the last scrape, 0 when the check failed or timed out. */
  readonly dependencyUp: Gauge<"dependency">;
  /** Registers the check behind `byok_dependency_up{dependency}`; it runs at every scrape, bounded by 2 s. */
  watchDependency(dependency: Dependency, check: () => Promise<unknown>): void;
  /** Bounds a model name for a label (first `maxModelLabels` distinct values, then `other`). */
  modelLabel(model: string | undefined): string;
  /** `{ tenant }` when the tenant label is on (bounded), else `{}`. */
  tenantLabels(tenantId: string): { tenant?: string };
  /** Prometheus text exposition of every metric of this registry. */
  metrics(): Promise<string>;
  readonly contentType: string;
}

/** Options of {@link createMetrics}; the gateway config's `telemetry` section is one. */
export interface MetricsOptions {
  /** Collect Node process metrics (CPU, memory, event loop lag, GC) as `byok_process_*` etc. (default true). */
  processMetrics?: boolean;
  /** Add a `tenant` label to per-tenant metrics (default false: tenants are unbounded in principle). */
  metricsTenantLabel?: boolean;
  /** Distinct model (and tenant) label values kept before new ones become `other` (default 50). */
  metricsMaxModelLabels?: number;
}

const GENAI_LABELS: GenAiLabels[] = ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model", "gen_ai_response_model", "tenant"];
// Bucket boundaries recommended by the GenAI metric conventions.
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const CHUNK_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5];
const DEPENDENCY_CHECK_TIMEOUT_MS = 2_000;
const OVERHEAD_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

export function createMetrics(options: MetricsOptions = {}): GatewayMetrics {
  const p = "byok_";
  const registry = new Registry();
  const registers = [registry];
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: p });
  const max = options.metricsMaxModelLabels ?? 50;
  const model = boundedLabel(max);
  const tenant = boundedLabel(max);
  const tenantOn = options.metricsTenantLabel ?? false;
  let queueSource: (() => Promise<Record<QueueState, number>>) | undefined;
  // Checked when scraped, so the value is as fresh as the scrape and no timer runs in between.
  const dependencyChecks = new Map<Dependency, () => Promise<unknown>>();
  const dependencyUp = new Gauge({
    name: `${p}dependency_up`,
    help: "1 when this process reached the dependency at the last scrape, else 0",
    labelNames: ["dependency"],
    registers,
    async collect() {
      await Promise.all(
        [...dependencyChecks].map(async ([dependency, check]) => {
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("timeout")), DEPENDENCY_CHECK_TIMEOUT_MS)));
          const up = await Promise.race([check(), timeout]).then(() => 1, () => 0).finally(() => clearTimeout(timer));
          this.set({ dependency }, up);
        }),
      );
    },
  });
  return {
    registry,
    bidiAppends: new Counter({ name: `${p}bidi_appends_total`, help: "BidiAppend calls by outcome", labelNames: ["outcome"], registers }),
    runSseOpen: new Gauge({ name: `${p}run_sse_open`, help: "Open RunSSE connections", registers }),
    connectionsOpen: new Gauge({ name: `${p}connections_open`, help: "TCP connections the edge holds (GATEWAY_MAX_CONNECTIONS)", registers }),
    connectionsRefused: new Counter({ name: `${p}connections_refused_total`, help: "Connections refused past GATEWAY_MAX_CONNECTIONS", registers }),
    runSseStreams: new Counter({ name: `${p}run_sse_streams_total`, help: "Finished RunSSE streams by end-stream code", labelNames: ["end_code"], registers }),
    framesDelivered: new Counter({ name: `${p}frames_delivered_total`, help: "AgentServerMessage frames written to RunSSE readers", registers }),
    controlPlaneCalls: new Counter({
      name: `${p}control_plane_calls_total`,
      help: "Control-plane calls by procedure and Connect code",
      labelNames: ["procedure", "code"],
      registers,
    }),
    unimplementedProcedures: new Counter({
      name: `${p}unimplemented_procedures_total`,
      help: "aiserver.v1 procedures answered unimplemented, by procedure",
      labelNames: ["procedure"],
      registers,
    }),
    analyticsEvents: new Counter({ name: `${p}analytics_events_total`, help: "TrackEvents events accepted (never stored)", registers }),
    sessionTokens: new Counter({ name: `${p}session_tokens_total`, help: "Session token grants by grant and outcome", labelNames: ["grant", "outcome"], registers }),
    clientTraceExports: new Counter({ name: `${p}client_trace_exports_total`, help: "Client /v1/traces exports by outcome", labelNames: ["outcome"], registers }),
    adminRequests: new Counter({ name: `${p}admin_requests_total`, help: "Admin API requests by route pattern and HTTP status", labelNames: ["route", "status"], registers }),
    ledgerSpoolRows: new Counter({
      name: `${p}ledger_spool_rows_total`,
      help: "Ledger rows held during a database outage, by outcome (held, recorded, lost)",
      labelNames: ["outcome"],
      registers,
    }),
    runsStarted: new Counter({ name: `${p}runs_started_total`, help: "Generations started (takeovers excluded)", labelNames: ["tenant"], registers }),
    runsEnded: new Counter({ name: `${p}runs_ended_total`, help: "Generations ended by end code", labelNames: ["code", "tenant"], registers }),
    runsActive: new Gauge({ name: `${p}runs_active`, help: "Generations executing in this process", registers }),
    takeovers: new Counter({ name: `${p}takeovers_total`, help: "Generations taken over from a previous owner's snapshot", registers }),
    fencedWrites: new Counter({ name: `${p}fenced_writes_total`, help: "Bus and store writes refused by the fencing epoch", labelNames: ["op"], registers }),
    refusals: new Counter({ name: `${p}refusals_total`, help: "Runs and attempts refused by budgets or rate limits", labelNames: ["reason", "tenant"], registers }),
    providerRetries: new Counter({
      name: `${p}provider_retries_total`,
      help: "Provider attempts retried or failed over, by error kind",
      labelNames: ["provider", "reason", "action"],
      registers,
    }),
    tokens: new Counter({ name: `${p}tokens_total`, help: "Provider tokens by provider and normalized kind", labelNames: ["provider", "kind", "tenant"], registers }),
    cost: new Counter({
      name: `${p}cost_usd_total`,
      help: "USD charged by usage ledger rows, by provider and model",
      labelNames: ["provider", "gen_ai_request_model", "tenant"],
      registers,
    }),
    queueDepth: new Gauge({
      name: `${p}queue_depth`,
      help: "Run jobs in the queue by state",
      labelNames: ["state"],
      registers,
      async collect() {
        if (!queueSource) return;
        // A scrape during a Redis outage keeps the last values rather than failing /metrics.
        const counts = await queueSource().catch(() => undefined);
        if (counts) for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
      },
    }),
    queueDepthFrom: (source) => {
      queueSource = source;
    },
    queueWait: new Histogram({
      name: `${p}queue_wait_seconds`,
      help: "Seconds a run job waited in the queue before a worker started it",
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    genAiTokenUsage: new Histogram({
      name: "gen_ai_client_token_usage",
      help: "Number of input and output tokens used per GenAI operation",
      labelNames: [...GENAI_LABELS, "gen_ai_token_type"],
      buckets: TOKEN_BUCKETS,
      registers,
    }),
    genAiOperationDuration: new Histogram({
      name: "gen_ai_client_operation_duration_seconds",
      help: "GenAI operation duration",
      labelNames: [...GENAI_LABELS, "error_type"],
      buckets: DURATION_BUCKETS,
      registers,
    }),
    genAiTimeToFirstChunk: new Histogram({
      name: "gen_ai_client_operation_time_to_first_chunk_seconds",
      help: "Time from issuing a streaming GenAI request to receiving its first chunk",
      labelNames: GENAI_LABELS,
      buckets: DURATION_BUCKETS,
      registers,
    }),
    genAiTimePerOutputChunk: new Histogram({
      name: "gen_ai_client_operation_time_per_output_chunk_seconds",
      help: "Time between consecutive output chunks of a streaming GenAI response, after the first",
      labelNames: GENAI_LABELS,
      buckets: CHUNK_BUCKETS,
      registers,
    }),
    overhead: new Histogram({
      name: `${p}gateway_overhead_seconds`,
      help: "Seconds the gateway adds between the provider and the client, by stage",
      labelNames: ["stage"],
      buckets: OVERHEAD_BUCKETS,
      registers,
    }),
    dependencyUp,
    watchDependency: (dependency, check) => void dependencyChecks.set(dependency, check),
    modelLabel: (m) => model(m ?? ""),
    tenantLabels: (id) => (tenantOn ? { tenant: tenant(id) } : {}),
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
