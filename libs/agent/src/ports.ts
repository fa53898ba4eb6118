import type { Bus, RequestRef, RunPrincipal } from "@byok/bus";
import type { RetryPolicy, RunError, RunStart, ProviderAdapter, ProviderKind, ProviderTarget } from "@byok/protocol";
import type { ContentMode, Store } from "@byok/store";
import type { GatewayMetrics, Logger, TraceCarrier } from "@byok/telemetry";
import type { RunMeter } from "./metering.js";

/** What the engine needs from the world; a service wires these (see libs/runtime). */
export type TargetResolution = { ok: true; targets: ProviderTarget[] } | { ok: false; error: RunError };

/** How a run may store content (retention and ghost mode), asked once per generation once the principal is known. */
export interface ContentPolicy {
  modeFor(tenantId: string, principal: RunPrincipal): Promise<ContentMode>;
}

export interface RunEngineDeps {
  bus: Bus;
  store: Store;
  adapterFor(kind: ProviderKind): ProviderAdapter;
  /** Route + credentials → ordered targets (README "Model routing"); may look up the tenant's routes. */
  resolveTargets(run: RunStart, tenantId: string): TargetResolution | Promise<TargetResolution>;
  retryPolicy: RetryPolicy;
  timers: {
    reconnectGraceMs: number;
    presenceCheckMs: number;
    kvAckTimeoutMs: number;
    toolTimeoutMs: number;
    prewarmTtlMs: number;
    snapshotIntervalMs: number;
    /** How long a conversation remembers its current run (longer than any run). */
    conversationRunTtlMs: number;
    /** Window in which streamed deltas after a pass's first one merge into one frame (0 = off). */
    deltaCoalesceMs?: number;
  };
  logger: Logger;
  /** System instructions when the client sent no custom_system_prompt. */
  defaultInstructions?: string;
  /** Called with every secret a run handles (client BYOK keys) so logs scrub it; returns a release. */
  registerSecret?(secret: string): () => void;
  /** The web search backend; absent = web search is disabled by policy (the default). */
  webSearch?: WebSearchBackend;
  /** Rate limits, budgets and the usage ledger (default: unmetered). */
  meter?: RunMeter;
  /** Retention / ghost mode: where a run may write content (default: the store). */
  content?: ContentPolicy;
  /** The process's metric catalogue (default: no metrics). */
  metrics?: GatewayMetrics;
  /**
   * Whether the tenant opted in to prompts and completions in its provider-call spans
   * (default: never). A run in privacy mode never puts content in spans, whatever this says.
   */
  traceContent?(tenantId: string): boolean;
}

/** A pluggable web search backend (off by default). */
export interface WebSearchBackend {
  search(query: string, signal: AbortSignal): Promise<{ title: string; url: string; snippet: string }[]>;
}

export interface RunEngine {
  /**
   * Runs one generation of a request to its end: claims it (bumping the fencing epoch), feeds
   * its input through the state machine, calls providers and appends output. Resolves when the
   * generation ended or ownership was lost. Never throws for run-level failures: they end the
   * stream with an error status.
   */
  runGeneration(ref: RequestRef, generation: number, signal?: AbortSignal, job?: { trace: TraceCarrier }): Promise<void>;
}
