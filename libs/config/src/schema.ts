import { z } from "zod";
import { RouteCatalogueSchema } from "./control-plane.js";

const ms = (def: number) => z.coerce.number().int().min(1).default(def);

/** Every timer of the gateway; tests shorten them. Milliseconds. */
export const TimersSchema = z.object({
  /** Send `interaction_update.heartbeat` after this much silence on a RunSSE. */
  heartbeatMs: ms(5_000),
  /** A RunSSE whose request never appears ends `not_found` after this. */
  notFoundWaitMs: ms(30_000),
  /** After the last reader of a live run leaves, cancel the run after this. */
  reconnectGraceMs: ms(30_000),
  /** Ended runs stay readable this long. */
  finishedRetentionMs: ms(30_000),
  /** Idle append_seqno state is dropped after this. */
  sequenceStateTtlMs: ms(600_000),
  /** A RunSSE arriving after the latest generation ended waits this long for a new one. */
  newGenerationWaitMs: ms(1_000),
  /** A checkpoint whose blobs the client has not acknowledged by then is skipped. */
  kvAckTimeoutMs: ms(15_000),
  /** A client tool execution that does not answer by then is aborted; the model gets a tool error. */
  toolTimeoutMs: ms(600_000),
  /** A prewarmed request whose run_request does not come by then ends with {}. */
  prewarmTtlMs: ms(60_000),
  /** On SIGTERM an ingress lets open RunSSE streams run this long before cutting them (clients resume elsewhere). */
  drainGraceMs: ms(20_000),
  /**
   * A stopping process (SIGTERM, SIGINT) that has not closed this long after it began closing
   * (after an ingress's drain) exits 1: a connection to an unreachable Redis or Postgres never closes.
   */
  shutdownTimeoutMs: ms(10_000),
  /** While a summary pass runs (it streams nothing a takeover could read back), the run snapshot is saved at most this often. */
  snapshotIntervalMs: ms(250),
  /**
   * Text and thinking deltas that follow the pass's first one are held this long and merged
   * into one frame and one bus append (0 = every provider delta is its own frame). The first
   * delta of a pass and every other frame kind go out at once.
   */
  deltaCoalesceMs: z.coerce.number().int().min(0).max(1_000).default(20),
  /**
   * A run learns of its last reader leaving, a newer run of its conversation and its shared
   * prewarm being taken from bus wake-ups; it also checks this often in case one was lost (or a
   * crashed ingress's readers expired, which sends nothing).
   */
  presenceCheckMs: ms(10_000),
  /** A RunSSE reader's presence expires this long after its last refresh (a crashed ingress's readers vanish). */
  readerTtlMs: ms(10_000),
  /** How long a conversation remembers its current run (a newer run_request supersedes it); longer than any run. */
  conversationRunTtlMs: ms(6 * 60 * 60 * 1000),
  /** Embedded mode: a dispatch of a generation already started within this window is a no-op. */
  dispatchDedupeMs: ms(60_000),
  /** Tenant records (retention, privacy policy, rate and budget limits) a process reads for runs are cached this long. */
  contentPolicyCacheMs: ms(5_000),
  /**
   * A verified gateway API key is trusted this long per process without reading it again (every
   * request of a turn authenticates); a revocation made on another replica holds within it.
   * 0 reads the key on every request.
   */
  apiKeyCacheMs: z.coerce.number().int().min(0).max(300_000).default(5_000),
  /**
   * A tenant's routes and the price table are read at most this often per process (every model
   * call resolves routes before its provider request; every ledger row is priced); a change made
   * through the same process applies at once, one made on another replica within it. 0 reads
   * them every time.
   */
  routeCacheMs: z.coerce.number().int().min(0).max(300_000).default(5_000),
  /**
   * A budget reservation is a lease of this length, renewed every third of it while its
   * attempt runs; a crashed worker's reservation stops counting at most this long after its
   * last renewal. 1 s to 1 h.
   */
  budgetLeaseTtlMs: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000),
  /** How often a process tries to write the ledger rows held during a database outage (docs/reliability.md). */
  ledgerSpoolDrainMs: ms(5_000),
});

/** Every size limit; each one is documented in README "Limits". */
export const LimitsSchema = z.object({
  /** Largest AgentClientMessage accepted by BidiAppend (decoded bytes). */
  maxPayloadBytes: z.coerce.number().int().min(1024).default(8 * 1024 * 1024),
  /** How far ahead of the next expected append_seqno an append may be buffered. */
  seqnoWindow: z.coerce.number().int().min(1).default(256),
  /** Frames one run generation may append to its output stream before it ends `resource_exhausted`. */
  maxOutputFrames: z.coerce.number().int().min(10).default(50_000),
  /** Input entries one generation may receive. */
  maxInputEntries: z.coerce.number().int().min(10).default(10_000),
  /** RunSSE streams one process serves at once; past it a new one ends `resource_exhausted` at once. */
  maxRunSseStreams: z.coerce.number().int().min(1).default(20_000),
  /**
   * TCP connections one edge process holds at once (keep-alive sockets, BidiAppends, RunSSE
   * streams, HTTP/2 sessions); a request on a connection past it is answered
   * `resource_exhausted` (retryable, `retry-after: 1`) and that connection closed.
   */
  maxConnections: z.coerce.number().int().min(1).max(1_000_000).default(30_000),
  /**
   * Connections the kernel queues for the edge port before the process accepts them (the listen
   * backlog; Linux caps it at net.core.somaxconn). Node's own default, 511, overflows when
   * thousands of clients connect within a second to a busy replica: their SYNs are dropped and
   * retried after a second or more.
   */
  listenBacklog: z.coerce.number().int().min(1).max(65_535).default(4_096),
  /**
   * Listening sockets on the edge port (Linux: SO_REUSEPORT, the kernel spreads new connections
   * over them; one elsewhere). Node accepts one connection per listening socket per turn of the
   * event loop: with one, a replica busy streaming takes new connections only a few dozen a
   * second; with eight, eight times that.
   */
  listenSockets: z.coerce.number().int().min(1).max(64).default(8),
  /**
   * Bytes of output frames one RunSSE / Run stream reads from the bus at a time (the batch is
   * cut to about this much of the largest frame seen, at least one frame): what a stream whose
   * client stopped reading holds while it is parked. 64 KiB to 64 MiB.
   */
  readBatchBytes: z.coerce.number().int().min(64 * 1024).max(64 * 1024 * 1024).default(4 * 1024 * 1024),
  /**
   * Ledger rows held while the database is unreachable (Redis in distributed mode, memory in
   * embedded mode), written once it answers; past it a row is lost (logged, counted). 0: none held.
   */
  ledgerSpoolMaxRows: z.coerce.number().int().min(0).max(10_000_000).default(100_000),
});

/**
 * Distributed mode: the Redis bus, the BullMQ run queue and the provider workers. Each field
 * is read from its `envName` variable (e.g. workerConcurrency → GATEWAY_WORKER_CONCURRENCY).
 * Takeover of a dead worker's run takes up to deadWorkerCheckMs + stalledIntervalMs; of a hung
 * one, ½–1 × lockDurationMs + up to stalledIntervalMs (docs/distributed.md).
 */
export const DistributedSchema = z.object({
  /** Prefix of every bus key and channel (no braces: the bus adds the request's hash tag). */
  redisKeyPrefix: z.string().regex(/^[^{}\s]+$/, "must be non-empty, without braces or spaces").default("byok"),
  /** Redis Cluster seed nodes `host:port,host:port`; when set, REDIS_URL is not needed. */
  redisClusterNodes: z
    .string()
    .transform((s) => s.split(",").map((x) => x.trim()).filter(Boolean))
    .pipe(z.array(z.string().regex(/^[^:\s]+:\d+$/, "must be host:port")).min(1))
    .optional(),
  /** BullMQ queue name (no `:`). */
  queueName: z.string().regex(/^[A-Za-z0-9_.-]+$/, "letters, digits, _ . - only").default("runs"),
  /** BullMQ key prefix; must be one hash tag `{...}` so the whole queue lives in one cluster slot. */
  queuePrefix: z.string().regex(/^\{[^{}:\s]+\}$/, "must be a hash tag like {byok}").default("{byok}"),
  /** Run generations one worker process (or the embedded gateway) executes at once; later ones wait for a slot. */
  workerConcurrency: z.coerce.number().int().min(1).max(10_000).default(256),
  /**
   * Runs waiting in the queue for a worker (every worker busy at its concurrency) past which
   * the ingress refuses a new run at once: `resource_exhausted`, retryable, `retry-after`.
   * 0: no limit (runs queue without bound). The embedded gateway applies it to its own waiting runs.
   */
  maxWaitingRuns: z.coerce.number().int().min(0).default(10_000),
  /**
   * BullMQ job lock; renewed every half of it while the worker lives. Only a worker that hangs
   * or is cut off with its sockets open waits this out; a dead process is found sooner (below).
   */
  lockDurationMs: ms(5_000),
  /** How often every worker looks for jobs whose lock expired or was freed (stalled) and re-queues them. */
  stalledIntervalMs: ms(500),
  /**
   * How often every worker looks for workers whose process died (their presence subscription
   * vanished with their connections) and frees their runs for the next stalled check.
   */
  deadWorkerCheckMs: ms(250),
  /** Takeovers of one job after stalls before BullMQ fails it. */
  maxStalledCount: z.coerce.number().int().min(0).default(5),
  /** Attempts of a run job whose processor failed (e.g. Redis errors); each retry is a takeover. */
  jobAttempts: z.coerce.number().int().min(1).default(5),
  /** Fixed delay before such a retry. */
  jobBackoffMs: z.coerce.number().int().min(0).default(200),
});

export const RouteTargetSchema = z.object({
  provider: z.enum(["openai-responses", "openai-chat", "anthropic", "azure-openai", "bedrock-anthropic"]),
  /** Upstream model id (Azure: the deployment). */
  model: z.string().min(1),
  baseUrl: z.string().url().optional(),
  /** Whose key the target uses: the gateway's (apiKeyEnv / apiKey) or the Cursor client's own. */
  credentials: z.enum(["gateway", "client"]).default("gateway"),
  /** Name of the environment variable holding the API key (keeps keys out of the file). */
  apiKeyEnv: z.string().optional(),
  /** Inline API key; prefer apiKeyEnv. */
  apiKey: z.string().optional(),
  /** A provider credential of the tenant held encrypted in the store (admin `credential set`). */
  credentialsRef: z.string().regex(/^[A-Za-z0-9._:-]{1,200}$/, "letters, digits, . _ : - only").optional(),
  azure: z.object({ deployment: z.string(), apiVersion: z.string().optional() }).optional(),
  bedrock: z
    .object({ region: z.string(), accessKeyIdEnv: z.string().optional(), secretAccessKeyEnv: z.string().optional() })
    .optional(),
  contextWindow: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  options: z.record(z.string(), z.unknown()).optional(),
});

export const RouteSchema = z.object({
  /** The Cursor model id (RequestedModel.model_id) this route serves. */
  modelId: z.string().min(1),
  /** Tried in order; failover only before the first output reached the client. */
  targets: z.array(RouteTargetSchema).min(1),
  /** What Cursor's model picker shows for this route (display name, aliases, capabilities). */
  catalogue: RouteCatalogueSchema.optional(),
});

export const ConfigFileSchema = z.object({
  routes: z.array(RouteSchema).default([]),
});

export type DistributedConfig = z.infer<typeof DistributedSchema>;
export type Timers = z.infer<typeof TimersSchema>;
export type Limits = z.infer<typeof LimitsSchema>;
export type RouteConfig = z.infer<typeof RouteSchema>;
export type RouteTargetConfig = z.infer<typeof RouteTargetSchema>;
export type ConfigFile = z.infer<typeof ConfigFileSchema>;
