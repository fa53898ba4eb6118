import type { AgentMode, AgentServerMessage, ConversationStateStructure, PrewarmRequest, TodoItem } from "@byok/wire";
import type { ProviderEvent, ToolCallPart, Usage } from "./model/index.js";
import type { Blob } from "./blobs.js";
import type { ClientEvent } from "./classify.js";
import type { TurnView } from "./checkpoint.js";
import type { EndDecision, RunError } from "./errors.js";
import type { OutputGate } from "./gate.js";
import type { RunStart } from "./run-request.js";
import type { EditState, ExecPlan, ShellAgg, ToolPlan } from "./tools/index.js";
import type { AttemptTranslation } from "./translate.js";

/** The run's state types, shared by machine.ts, tool-loop.ts and the other transitions. */
export type Phase = "awaiting_run" | "importing" | "model_call" | "tools" | "finishing" | "ended";

export interface RunState {
  readonly phase: Phase;
  readonly requestId: string;
  readonly generation: number;
  readonly run: RunStart | undefined;
  /** Model calls started in this generation; ids derive from it. */
  readonly modelCalls: number;
  readonly attempt: number;
  readonly current: AttemptTranslation | undefined;
  /** Completed steps of the turn, for checkpoints. */
  readonly steps: TurnView["steps"];
  /** Usage summed over every attempt of the turn. */
  readonly usage: Usage;
  readonly unknownLogged: boolean;
  readonly gate: OutputGate;
  /** The mode tools are offered for (SwitchMode may change it). */
  readonly mode: AgentMode;
  /** The conversation's todos (TodoWrite). */
  readonly todos: readonly TodoItem[];
  /** Tool calls of the last model pass, while the client executes them. */
  readonly tools: ToolLoop | undefined;
  /** The plan the user accepted (CreatePlan). */
  readonly plan: { name: string; overview: string; plan: string; uri: string } | undefined;
  readonly policy: RunPolicy;
  /** inject_context queued for the next provider pass (recorded into history when it starts). */
  readonly injections: readonly { id: string; text: string; kind: string }[];
  /** The summary this run produced (summarize action). */
  readonly summary: string | undefined;
  /** A prewarm_request that prepared this generation, reused by the run_request that follows. */
  readonly prewarm: PrewarmRequest | undefined;
  /** Automatic compaction in progress: a summary pass over history before `coversBeforeSeq`. */
  readonly compacting:
    | {
        coversBeforeSeq: number | undefined;
        /** The context window the summary pass must fit (smaller than the route's after a provider's refusal). */
        window: number | undefined;
        /** The pre_compact hook in flight (exec bridge id), if the client declared one. */
        hook: { id: number; execId: string } | undefined;
        /** What the hook answered: guides the summary, becomes summary_completed.hook_message. */
        hookMessage: string | undefined;
      }
    | undefined;
  /** This turn was compacted already (never twice per turn). */
  readonly compactedInTurn: boolean;
  /** The context window of the pass's provider target (route `contextWindow`), once a pass started. */
  readonly contextWindow: number | undefined;
  /**
   * The client sent no conversation_state and the store had a checkpoint of the conversation:
   * the run continues from it (`run.conversationState` is this state).
   */
  readonly storedBase: ConversationStateStructure | undefined;
  /** Import of a client-held conversation in progress: blobs resolved so far, gets in flight. */
  readonly importing: { have: ReadonlyMap<string, Uint8Array>; pending: ReadonlyMap<number, string> } | undefined;
}

/** The tool phase's state (tool-loop.ts drives it): the tool calls of one model pass. */
export interface ToolLoop {
  readonly modelCallId: string;
  /** Next exec bridge id (uint32, never 0) and interaction id; they keep counting across passes. */
  readonly nextExecId: number;
  readonly nextInteractionId: number;
  readonly calls: readonly PendingTool[];
}

export type Bridge =
  | { kind: "exec"; id: number; execId: string }
  | { kind: "interaction"; id: number }
  | { kind: "await"; id: number }
  | { kind: "web_search"; id: number };

export interface PendingTool {
  /** The model's call as it arrived (a new owner re-plans from it after a takeover). */
  readonly call: ToolCallPart;
  readonly callId: string;
  readonly toolName: string;
  readonly plan: ToolPlan;
  /** What the call currently waits on; undefined once done. */
  readonly bridge: Bridge | undefined;
  readonly shell: ShellAgg | undefined;
  readonly edit: EditState | undefined;
  /** WebFetch after approval runs as this exec. */
  readonly execPlan: ExecPlan | undefined;
  readonly done: boolean;
}

/** Gateway policy a run needs to decide things (from configuration). */
export interface RunPolicy {
  /** A client tool (exec) that does not answer by then is aborted and reported to the model. */
  toolTimeoutMs: number;
  /** A web search backend is configured. Off: WebSearch tells the model it is disabled by policy. */
  webSearch: boolean;
}

export type RunEvent =
  | { type: "client"; event: ClientEvent }
  | { type: "model"; event: ProviderEvent; nowMs: number }
  /**
   * The engine's failure policy (attempt-failure.ts) re-runs the current model call: a retry
   * (`retry` numbers it, for the notice) or a failover to the next target (`retry` undefined).
   */
  | { type: "model_retry"; retry: { retryNumber: number; maxRetries: number } | undefined; usage: Usage | undefined }
  | { type: "model_failed"; error: RunError; usage: Usage | undefined }
  /** The run cannot start (routing refused, unknown model ...). */
  | { type: "run_refused"; error: RunError }
  | { type: "reader_gone" }
  | { type: "output_cap"; limit: number }
  /** The KV acknowledgement wait of checkpoint `seq` ran out. */
  | { type: "kv_timeout"; seq: number }
  /** This owner took the run over: re-run a cut model call (after a notice) or finish a held end. */
  | { type: "resume" }
  /** A tool call's wait ran out (exec timeout, AwaitShell block). */
  | { type: "tool_timeout"; callId: string; bridgeId: number }
  /**
   * Whether the store already has the run's conversation (answers check_history), and the
   * stored blobs the client's turns reference (an import asks the client only for the rest).
   */
  | { type: "history_state"; known: boolean; blobs: readonly Blob[] }
  /**
   * The conversation's latest stored checkpoint (answers load_checkpoint): its state and every
   * blob it references that the store holds; undefined when none is stored.
   */
  | { type: "checkpoint_loaded"; stored: { state: ConversationStateStructure; blobs: readonly Blob[] } | undefined }
  /** A pass starts on a provider target with this context window (undefined: the route does not say). */
  | { type: "pass_target"; contextWindow: number | undefined }
  /** Blobs of an import did not all arrive in time: import what is there. */
  | { type: "import_timeout" }
  /**
   * The next pass would not fit the context window: compact history before `coversBeforeSeq`
   * first. `refused`: the provider refused the attempt as too long; the user is told with a
   * notice, and the summary pass is a new attempt that fits `window`.
   */
  | { type: "compaction_needed"; coversBeforeSeq: number | undefined; refused?: { window: number } }
  /** A newer run of the same conversation started: this one is superseded. */
  | { type: "superseded" }
  /** The prewarm's wait for its run_request ran out. */
  | { type: "prewarm_expired" }
  /** A resume run found nothing to resume. */
  | { type: "nothing_to_resume" }
  /** The web search backend answered for tool call `callId`. */
  | { type: "web_search_result"; callId: string; result: { hits: { title: string; url: string; snippet: string }[] } | { error: string } };

/** A history entry the engine stores (kind + JSON body), see docs/architecture.md. */
export interface HistoryRecord {
  kind: "user" | "assistant" | "tool" | "summary";
  body: Record<string, unknown>;
  interrupted: boolean;
}

export type Effect =
  | { type: "emit"; frames: AgentServerMessage[] }
  | { type: "start_model_call"; modelCallId: string; attempt: number }
  | { type: "abort_model_call" }
  | { type: "record_history"; entries: HistoryRecord[] }
  | { type: "end"; decision: EndDecision }
  /** Persist blobs the client is being sent (content-addressed). */
  | { type: "store_blobs"; blobs: Blob[] }
  /** Start the acknowledgement timer of checkpoint `seq` (→ kv_timeout). */
  | { type: "kv_wait"; seq: number }
  /** Start a tool wait timer (→ tool_timeout with the same ids). */
  | { type: "tool_timer"; callId: string; bridgeId: number; ms: number }
  /** Does the store have history for this conversation, and which of the turns' blobs? (→ history_state) */
  | { type: "check_history"; conversationId: string }
  /** The client sent no conversation_state: read the conversation's latest stored checkpoint (→ checkpoint_loaded). */
  | { type: "load_checkpoint"; conversationId: string }
  /** Persist the turn's final checkpoint (retention permitting), fenced by the run's epoch. */
  | { type: "save_checkpoint"; conversationId: string; state: ConversationStateStructure }
  /** Start the wait for imported blobs (→ import_timeout). */
  | { type: "import_wait" }
  /** Share the prewarm with its conversation (another request id may reuse it within the TTL). */
  | { type: "share_prewarm"; conversationId: string; request: PrewarmRequest }
  /** Start the prewarm TTL (→ prewarm_expired). */
  | { type: "prewarm_wait" }
  /** Make this run its conversation's current one (a newer run_request there supersedes it). */
  | { type: "mark_conversation_run"; conversationId: string }
  /** Ask the web search backend (→ web_search_result). */
  | { type: "web_search"; callId: string; query: string }
  | { type: "log"; level: "info" | "warn"; message: string; fields?: Record<string, unknown> };

/** What transitions produce; `gated()` turns output into gate effects. */
export type Draft =
  | Effect
  | {
      type: "checkpoint";
      steps: TurnView["steps"];
      pendingToolCalls?: readonly string[];
      /** Blobs of the base state the client lacks (a checkpoint served from the store). */
      baseBlobs?: readonly Blob[];
    }
  /** Every tool call of the pass is answered: start the next model pass. */
  | { type: "next_pass" };

