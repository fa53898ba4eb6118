import { trace, SpanStatusCode, context as otelContext } from "@opentelemetry/api";
import { principalFromMeta, type Bus, type RequestRef, type RunPrincipal, type TraceCarrier } from "@byok/bus";
import {
  ProviderError, decideRetry, type ChatItem, type ProviderAdapter, type ProviderKind, type ProviderTarget, type RetryPolicy, type ToolSpec, type Usage,
} from "@byok/providers";
import {
  classifyClientMessage, decodeClientMessage, encodeErrorDetails, encodeServerMessage, initialRunState,
  readRunStart, restoreRunState, runErrorFromProvider, snapshotRunState, step,
  type ClientEvent, type Effect, type RunError, type RunEvent, type RunPolicy, type RunStart, type RunState,
} from "@byok/protocol";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { PrewarmRequestSchema } from "@byok/wire";
import type { Store } from "@byok/store";
import { ATTR, extractTraceContext, injectTraceContext, SPAN, type Logger } from "@byok/telemetry";
import { EventQueue } from "./event-queue.js";
import { passRequest } from "./pass-request.js";
import { decodeSnapshot, encodeSnapshot, type RunSnapshot } from "./snapshot.js";
import { estimateTokens, UNMETERED, type AttemptInfo, type AttemptOutcome, type RunMeter } from "./metering.js";
import { contentStore, type ContentPolicy } from "./metering-content.js";

/** A queued event, with the input entry it came from (for snapshots). */
interface QueuedEvent {
  ev: RunEvent;
  inputIndex?: number;
}

export type TargetResolution = { ok: true; targets: ProviderTarget[] } | { ok: false; error: RunError };

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
  runGeneration(ref: RequestRef, generation: number, signal?: AbortSignal): Promise<void>;
}


const tracer = trace.getTracer("@byok/agent");

/** How long a conversation remembers its current run (longer than any run). */
const CONVERSATION_RUN_TTL_MS = 6 * 60 * 60 * 1000;


export function createRunEngine(deps: RunEngineDeps): RunEngine {
  return { runGeneration: (ref, generation, signal) => new GenerationRun(deps, ref, generation, signal).run() };
}

/** One generation's run: the actor that owns the state machine and its I/O. */
class GenerationRun {
  private state: RunState;
  private readonly queue = new EventQueue<QueuedEvent>();
  /** Input entries whose events the state machine has processed (what a snapshot may claim). */
  private processedInput = 0;
  private epoch = 0;
  private inputIndex = 0;
  private runRequestIndex: number | undefined;
  private outputFrames = 0;
  private pendingFrames: Uint8Array[] = [];
  private lost = false;
  private readonly startedAt = Date.now();
  private model: { controller: AbortController; token: number } | undefined;
  private callToken = 0;
  private targets: ProviderTarget[] = [];
  private targetIndex = 0;
  /** Retries used so far in this model call, per phase. */
  private retries = { connect: 0, stream: 0 };
  private releaseSecrets: (() => void)[] = [];
  private pumping: Promise<void> = Promise.resolve();
  private savedAt = 0;
  private savedOutputStarted = false;
  private timers: NodeJS.Timeout[] = [];
  private traceCarrier: TraceCarrier = {};
  private principal: RunPrincipal = principalFromMeta(undefined);
  private readonly meter: RunMeter;
  /** Where this run writes content (history, blobs, conversation row): the store or its memory. */
  private content: Store;
  private readonly policy: RunPolicy;
  private readonly log: Logger;

  constructor(
    private readonly deps: RunEngineDeps,
    private readonly ref: RequestRef,
    private readonly generation: number,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.policy = { toolTimeoutMs: deps.timers.toolTimeoutMs, webSearch: deps.webSearch !== undefined };
    this.state = initialRunState(ref.requestId, generation, this.policy);
    this.meter = deps.meter ?? UNMETERED;
    this.content = deps.store;
    this.log = deps.logger.child({ tenant: ref.tenantId, requestId: ref.requestId, generation });
  }

  async run(): Promise<void> {
    const { bus } = this.deps;
    const first = (await bus.readInput(this.ref, this.generation, 0))[0];
    const parent = first ? extractTraceContext(first.trace) : otelContext.active();
    const span = tracer.startSpan(SPAN.run, { attributes: { [ATTR.tenantId]: this.ref.tenantId, [ATTR.requestId]: this.ref.requestId, [ATTR.generation]: this.generation } }, parent);
    const ctx = trace.setSpan(parent, span);
    try {
      await otelContext.with(ctx, async () => {
        this.traceCarrier = injectTraceContext();
        const info = await bus.latestGeneration(this.ref);
        if (info?.generation === this.generation && info.ended) return; // a stale dispatch of an ended run
        this.epoch = await bus.claim(this.ref, this.generation);
        this.principal = principalFromMeta(first?.trace);
        if (this.deps.content) this.content = contentStore(this.deps.store, await this.deps.content.modeFor(this.ref.tenantId, this.principal));
        if (!(await this.restore())) {
          // A new run: rate limits apply to run starts (not to every append or takeover).
          const admitted = await this.meter.admitRun(this.ref, this.principal);
          if (!admitted.ok) this.queue.push({ ev: { type: "run_refused", error: admitted.error } });
        }
        // A failed read (Redis briefly unavailable) must not become an unhandled rejection that
        // kills the worker process: the next wake-up (every reconnect wakes all listeners) reads again.
        const stopInput = bus.watchInput(this.ref, () => {
          this.pumpInput().catch((err: unknown) => this.log.warn({ err }, "reading new input failed; the next wake-up retries"));
        });
        const presence = setInterval(() => void this.checkPresence(), this.deps.timers.presenceCheckMs);
        presence.unref();
        const onAbort = () => this.queue.close();
        this.signal?.addEventListener("abort", onAbort);
        try {
          await this.pumpInput();
          await this.loop();
        } finally {
          stopInput();
          clearInterval(presence);
          this.signal?.removeEventListener("abort", onAbort);
          this.model?.controller.abort();
          for (const t of this.timers) clearTimeout(t);
          for (const r of this.releaseSecrets) r();
        }
      });
      span.setStatus({ code: SpanStatusCode.OK });
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  }

  private async loop(): Promise<void> {
    while (this.state.phase !== "ended" && !this.lost) {
      const events = await this.queue.take();
      if (events.length === 0) return; // closed (worker shutdown): the next owner takes over
      let streamingOnly = true;
      for (const { ev, inputIndex } of events) {
        if (this.state.phase === "ended" || this.lost) break;
        if (inputIndex !== undefined) this.processedInput = inputIndex + 1;
        if (!isStreamingDelta(ev)) streamingOnly = false;
        const r = step(this.state, ev);
        this.state = r.state;
        for (const eff of r.effects) await this.execute(eff);
      }
      await this.flush();
      if (this.state.phase !== "ended" && !this.lost && this.snapshotDue(streamingOnly)) await this.saveSnapshot();
    }
  }

  /**
   * Snapshots are saved after every batch that changed more than streamed text; while a pass
   * only streams deltas, at most every `snapshotIntervalMs` (a takeover re-runs the pass anyway,
   * and the partial text it loses is only the interrupted tail). The first output of an attempt
   * is always saved: a takeover must know the client saw output (to send the notice).
   */
  private snapshotDue(streamingOnly: boolean): boolean {
    const outputStarted = this.state.current?.outputStarted ?? false;
    const due =
      !streamingOnly ||
      outputStarted !== this.savedOutputStarted ||
      Date.now() - this.savedAt >= this.deps.timers.snapshotIntervalMs;
    if (due) {
      this.savedAt = Date.now();
      this.savedOutputStarted = outputStarted;
    }
    return due;
  }

  /**
   * Takeover: rebuild the run from the previous owner's snapshot, then re-run a cut model call.
   * Returns false when there is nothing to take over (a new run).
   */
  private async restore(): Promise<boolean> {
    const snap = decodeSnapshot(await this.deps.bus.loadSnapshot(this.ref, this.generation));
    if (!snap) return false;
    let run: RunStart | undefined;
    if (snap.runRequestIndex !== undefined) {
      const entry = (await this.deps.bus.readInput(this.ref, this.generation, snap.runRequestIndex))[0];
      const decoded = entry && decodeClientMessage(entry.payload);
      if (decoded?.ok && decoded.message.message.case === "runRequest") run = readRunStart(decoded.message.message.value, this.ref.requestId);
    }
    this.state = restoreRunState(this.ref.requestId, this.generation, this.policy, snap.state, run);
    this.inputIndex = snap.inputIndex;
    this.processedInput = snap.inputIndex;
    this.runRequestIndex = snap.runRequestIndex;
    this.outputFrames = snap.outputFrames;
    this.retries = snap.retries;
    this.targetIndex = snap.targetIndex;
    this.log.warn({ phase: snap.state.phase, inputIndex: snap.inputIndex, outputFrames: snap.outputFrames }, "took over run");
    if (run && this.state.phase !== "awaiting_run" && this.state.phase !== "ended") {
      // The provider stream of the previous owner is gone: re-run the pass from stored history.
      const res = await this.deps.resolveTargets(run, this.ref.tenantId);
      if (res.ok) this.targets = res.targets;
      for (const s of secretsOf(run)) if (this.deps.registerSecret) this.releaseSecrets.push(this.deps.registerSecret(s));
      this.queue.push({
        ev: {
          type: "resume",
          notice: "\n\n[the gateway moved this run to another worker; continuing from the last saved point …]\n\n",
          heldEnd: snap.state.heldEnd,
        },
      });
    }
    // A takeover during an import starts the import over.
    if (run && this.state.phase === "importing") await this.execute({ type: "check_history", conversationId: run.conversationId });
    const cut = snap.state.current;
    if (run && cut && snap.state.phase === "model_call") {
      // The cut attempt's ledger row comes from the worker that takes over.
      const target = this.targets[this.targetIndex];
      if (target) {
        const info = this.attemptInfo(run, target, cut.modelCallId, snap.state.attempt, 0);
        const chars = cut.text.length + cut.thinkingText.length;
        await this.meter.settleAttempt(info, undefined, {
          outcome: "interrupted",
          usage: { ...this.estimate(0, chars), estimated: true },
          ttftMs: undefined,
          durationMs: 0,
        });
      }
    }
    return true;
  }

  private async runWebSearch(callId: string, query: string): Promise<void> {
    const backend = this.deps.webSearch;
    let result: { hits: { title: string; url: string; snippet: string }[] } | { error: string };
    if (!backend) result = { error: "web search is disabled by policy" };
    else {
      try {
        result = { hits: await backend.search(query, AbortSignal.timeout(this.deps.timers.toolTimeoutMs)) };
      } catch (err) {
        this.log.warn({ err }, "web search backend failed");
        result = { error: "the web search backend failed" };
      }
    }
    this.queue.push({ ev: { type: "web_search_result", callId, result } });
  }

  private attemptInfo(run: RunStart, target: ProviderTarget, modelCallId: string, attempt: number, inputChars: number): AttemptInfo {
    return {
      ref: this.ref,
      generation: this.generation,
      conversationId: run.conversationId,
      modelCallId,
      attempt,
      principal: this.principal,
      modelId: run.modelId,
      provider: target.kind,
      upstreamModel: target.model,
      credentialsSource: target.credentialsSource,
      estimatedInputTokens: estimateTokens(inputChars),
      maxOutputTokens: target.maxOutputTokens,
    };
  }

  private estimate(inputChars: number, outputChars: number): Usage {
    return {
      inputTokens: estimateTokens(inputChars), outputTokens: estimateTokens(outputChars),
      cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0, estimated: true,
    };
  }

  private async saveSnapshot(): Promise<void> {
    const snap: RunSnapshot = {
      v: 2,
      inputIndex: this.processedInput,
      runRequestIndex: this.runRequestIndex,
      outputFrames: this.outputFrames,
      retries: this.retries,
      targetIndex: this.targetIndex,
      state: snapshotRunState(this.state),
    };
    if (!(await this.deps.bus.saveSnapshot(this.ref, this.generation, this.epoch, encodeSnapshot(snap)))) {
      this.lost = true;
      this.model?.controller.abort();
      this.log.warn({ reason: "fenced", on: "snapshot" }, "lost ownership of the run");
    }
  }


  /** Reads new input into the mailbox; calls are serialized so entries are queued in order. */
  private pumpInput(): Promise<void> {
    const next = this.pumping.then(() => this.pumpOnce());
    // A failed read must not poison the chain: the caller sees it, the next pump starts fresh.
    this.pumping = next.catch(() => undefined);
    return next;
  }

  private async pumpOnce(): Promise<void> {
    const entries = await this.deps.bus.readInput(this.ref, this.generation, this.inputIndex);
    for (const e of entries) {
      if (e.index < this.inputIndex) continue;
      this.inputIndex = e.index + 1;
      const decoded = decodeClientMessage(e.payload);
      if (!decoded.ok) {
        // The ingress validated it; a bad entry here means a bug, not a reason to stop the run.
        this.log.warn({ index: e.index }, "undecodable input entry skipped");
        continue;
      }
      const event = await this.withSharedPrewarm(classifyClientMessage(decoded.message));
      if (event.kind === "run_request" && this.runRequestIndex === undefined) this.runRequestIndex = e.index;
      this.queue.push({ ev: { type: "client", event }, inputIndex: e.index });
    }
  }

  /** This run's name in its conversation (a newer run_request there supersedes it). */
  private get runKey(): string {
    return `${this.ref.requestId}/${this.generation}`;
  }
  private conversationMarked = false;

  /** Marks this run as its conversation's current one once it started; notices a newer run. */
  private async checkSuperseded(): Promise<void> {
    const run = this.state.run;
    if (!run || this.state.phase === "awaiting_run" || this.state.phase === "finishing") return;
    if (!this.conversationMarked) {
      this.conversationMarked = true;
      await this.deps.bus.markConversationRun(this.ref.tenantId, run.conversationId, this.runKey, CONVERSATION_RUN_TTL_MS);
      return;
    }
    const current = await this.deps.bus.conversationRun(this.ref.tenantId, run.conversationId);
    if (current && current !== this.runKey) this.queue.push({ ev: { type: "superseded" } });
  }

  /**
   * A run_request reuses its conversation's shared prewarm (taken once, atomically); a
   * prewarmed request that gets its own run_request withdraws the shared copy.
   */
  private async withSharedPrewarm(event: ClientEvent): Promise<ClientEvent> {
    if (event.kind !== "run_request" || this.state.phase !== "awaiting_run") return event;
    const conversationId = this.state.prewarm?.conversationId || event.request.conversationId;
    if (!conversationId) return event;
    const taken = await this.deps.bus.takePrewarm(this.ref.tenantId, conversationId);
    if (this.state.prewarm || !taken) return event;
    return { ...event, sharedPrewarm: fromBinary(PrewarmRequestSchema, taken) };
  }

  private async checkPresence(): Promise<void> {
    if (this.state.phase === "ended") return;
    try {
      // A prewarm taken by another request of its conversation (or expired) ends with {}.
      const prewarm = this.state.prewarm;
      if (prewarm?.conversationId && this.state.phase === "awaiting_run" && !(await this.deps.bus.hasPrewarm(this.ref.tenantId, prewarm.conversationId))) {
        this.queue.push({ ev: { type: "prewarm_expired" } });
      }
      await this.checkSuperseded();
      const p = await this.deps.bus.readerPresence(this.ref);
      if (p.readers > 0) return;
      const since = p.lastLeftAt ?? this.startedAt;
      if (Date.now() - since > this.deps.timers.reconnectGraceMs) this.queue.push({ ev: { type: "reader_gone" } });
    } catch (err) {
      this.log.warn({ err }, "reader presence check failed");
    }
  }

  private async execute(eff: Effect): Promise<void> {
    switch (eff.type) {
      case "emit":
        for (const f of eff.frames) this.pendingFrames.push(encodeServerMessage(f));
        return;
      case "record_history":
        await this.recordHistory(eff.entries);
        return;
      case "start_model_call":
        await this.startModelCall(eff.modelCallId, eff.attempt);
        return;
      case "abort_model_call":
        this.model?.controller.abort();
        this.model = undefined;
        return;
      case "end": {
        await this.flush();
        const d = eff.decision;
        const res = await this.deps.bus.endOutput(this.ref, this.generation, this.epoch, {
          ok: d.ok,
          ...(d.code ? { code: d.code } : {}),
          ...(d.message ? { message: d.message } : {}),
          ...(d.detail ? { errorDetails: encodeErrorDetails(d.detail) } : {}),
        });
        if (!res.ok && res.reason === "fenced") this.lost = true;
        this.log.info({ ok: d.ok, code: d.code }, "run ended");
        return;
      }
      case "log":
        this.log[eff.level](eff.fields ?? {}, eff.message);
        return;
      case "store_blobs": {
        const run = this.state.run;
        if (!run) return;
        for (const b of eff.blobs) await this.content.putBlob(this.ref.tenantId, b.id, b.data);
        return;
      }
      case "tool_timer": {
        const { callId, bridgeId } = eff;
        const t = setTimeout(() => this.queue.push({ ev: { type: "tool_timeout", callId, bridgeId } }), eff.ms);
        t.unref();
        this.timers.push(t);
        return;
      }
      case "check_history": {
        const history = await this.content.listHistory(this.ref.tenantId, eff.conversationId);
        this.queue.push({ ev: { type: "history_state", known: history.length > 0 } });
        return;
      }
      case "import_wait": {
        const t = setTimeout(() => this.queue.push({ ev: { type: "import_timeout" } }), this.deps.timers.kvAckTimeoutMs);
        t.unref();
        this.timers.push(t);
        return;
      }
      case "share_prewarm":
        await this.deps.bus.savePrewarm(this.ref.tenantId, eff.conversationId, toBinary(PrewarmRequestSchema, eff.request), this.deps.timers.prewarmTtlMs);
        return;
      case "prewarm_wait": {
        const t = setTimeout(() => this.queue.push({ ev: { type: "prewarm_expired" } }), this.deps.timers.prewarmTtlMs);
        t.unref();
        this.timers.push(t);
        return;
      }
      case "web_search":
        void this.runWebSearch(eff.callId, eff.query);
        return;
      case "kv_wait": {
        const seq = eff.seq;
        const t = setTimeout(() => this.queue.push({ ev: { type: "kv_timeout", seq } }), this.deps.timers.kvAckTimeoutMs);
        t.unref();
        this.timers.push(t);
        return;
      }
    }
  }

  private async flush(): Promise<void> {
    if (this.pendingFrames.length === 0 || this.lost) return;
    const frames = this.pendingFrames;
    this.pendingFrames = [];
    const res = await this.deps.bus.appendOutput(this.ref, this.generation, this.epoch, frames, this.traceCarrier);
    if (res.ok) {
      this.outputFrames = res.nextIndex;
      return;
    }
    if (res.reason === "fenced" || res.reason === "ended") {
      // Another worker owns the generation now: stop without touching anything.
      this.lost = true;
      this.model?.controller.abort();
      this.log.warn({ reason: res.reason }, "lost ownership of the run");
    } else {
      this.queue.push({ ev: { type: "output_cap", limit: res.limit } });
    }
  }

  private async recordHistory(entries: { kind: string; body: Record<string, unknown>; interrupted: boolean }[]): Promise<void> {
    const run = this.state.run;
    if (!run) return;
    await this.content.appendHistory(
      entries.map((e, i) => ({
        tenantId: this.ref.tenantId,
        conversationId: run.conversationId,
        requestId: this.ref.requestId,
        generation: this.generation,
        turn: 0,
        kind: e.kind,
        // Idempotent per (kind, model call, attempt): a new owner may re-append what the old one stored.
        body: { ...e.body, dedupeKey: `${e.kind}:${String(e.body.modelCallId ?? e.body.toolCallId ?? e.body.injectionId ?? e.body.action ?? "user")}:${String(e.body.attempt ?? 0)}:${i}` },
        interrupted: e.interrupted,
      })),
    );
  }

  private async startModelCall(modelCallId: string, attempt: number): Promise<void> {
    const run = this.state.run;
    if (!run) return;
    if (attempt === 1) {
      // The run's first pass makes it its conversation's current run at once.
      if (!this.conversationMarked) await this.checkSuperseded();
      // A new model call: resolve its targets and reset its retry budget.
      for (const s of secretsOf(run)) if (this.deps.registerSecret) this.releaseSecrets.push(this.deps.registerSecret(s));
      await this.content.upsertConversation(this.ref.tenantId, run.conversationId, { lastRequestId: this.ref.requestId });
      const res = await this.deps.resolveTargets(run, this.ref.tenantId);
      if (!res.ok) {
        this.queue.push({ ev: { type: "run_refused", error: res.error } });
        return;
      }
      this.targets = res.targets;
      this.targetIndex = 0;
      this.retries = { connect: 0, stream: 0 };
    }
    const target = this.targets[this.targetIndex];
    if (!target) {
      this.queue.push({ ev: { type: "run_refused", error: { kind: "bad_model", message: `No provider target for model ${run.modelId}.` } } });
      return;
    }
    const history = await this.content.listHistory(this.ref.tenantId, run.conversationId);
    const pass = passRequest(this.state, history, {
      attempt,
      contextWindow: target.contextWindow,
      defaultInstructions: this.deps.defaultInstructions,
      nowMs: Date.now(),
    });
    if (pass.kind === "nothing_to_resume") {
      this.queue.push({ ev: { type: "nothing_to_resume" } });
      return;
    }
    if (pass.kind === "compact") {
      this.log.info({ estimate: pass.estimate, window: pass.window }, "compacting the conversation before the next pass");
      this.queue.push({ ev: { type: "compaction_needed", coversBeforeSeq: pass.coversBeforeSeq } });
      return;
    }
    const controller = new AbortController();
    const token = ++this.callToken;
    this.model = { controller, token };
    void this.streamModelCall(token, controller, target, { modelCallId, attempt, instructions: pass.instructions, items: pass.items, tools: pass.tools });
  }

  private async streamModelCall(
    token: number,
    controller: AbortController,
    target: ProviderTarget,
    req: { modelCallId: string; attempt: number; instructions: string; items: ChatItem[]; tools: ToolSpec[] },
  ): Promise<void> {
    const run = this.state.run!;
    const adapter = this.deps.adapterFor(target.kind);
    const live = () => this.model?.token === token && !controller.signal.aborted;
    const inputChars = req.instructions.length + JSON.stringify(req.items).length;
    const info = this.attemptInfo(run, target, req.modelCallId, req.attempt, inputChars);
    const admission = await this.meter.admitAttempt(info);
    if (!admission.ok) {
      if (live()) this.queue.push({ ev: { type: "model_failed", error: admission.error, usage: undefined } });
      return;
    }
    const startedAt = Date.now();
    let firstEventAt: number | undefined;
    let usage: Usage | undefined;
    let outcome: AttemptOutcome = "cancelled";
    const span = tracer.startSpan(SPAN.modelCall, {
      attributes: { [ATTR.provider]: target.kind, [ATTR.modelCallId]: req.modelCallId, "byok.attempt": req.attempt },
    });
    try {
      for await (const ev of adapter.stream({ ...req, target, signal: controller.signal })) {
        firstEventAt ??= Date.now();
        if (ev.type === "completed") {
          usage = ev.usage;
          outcome = "ok";
        }
        if (!live()) return;
        this.queue.push({ ev: { type: "model", event: ev, nowMs: Date.now() } });
      }
      span.setStatus({ code: SpanStatusCode.OK });
    } catch (err) {
      const e = err instanceof ProviderError ? err : new ProviderError("network", "The model provider connection failed.", { cause: err });
      usage = e.partialUsage;
      if (!live() || e.kind === "cancelled") return;
      span.setStatus({ code: SpanStatusCode.ERROR, message: e.kind });
      outcome = (await this.onModelFailure(e, firstEventAt !== undefined, target, controller)) ? "retried" : "failed";
    } finally {
      span.end();
      // Usage is never lost: exact where the provider reported it, else an estimate.
      const outputChars = (this.state.current?.text.length ?? 0) + (this.state.current?.thinkingText.length ?? 0);
      await this.meter
        .settleAttempt(info, admission.ticket, {
          outcome,
          usage: usage ?? this.estimate(inputChars, outputChars),
          ttftMs: firstEventAt === undefined ? undefined : firstEventAt - startedAt,
          durationMs: Date.now() - startedAt,
        })
        .catch((err: unknown) => this.log.error({ err }, "could not record the attempt's usage"));
    }
  }

  /** Decides retry, failover or failure of an attempt; true when the model call goes on. */
  private async onModelFailure(e: ProviderError, sawEvent: boolean, target: ProviderTarget, controller: AbortController): Promise<boolean> {
    const phase = sawEvent ? "stream" : "connect";
    const decision = decideRetry(this.deps.retryPolicy, e, phase, this.retries[phase]);
    this.log.warn({ provider: target.kind, kind: e.kind, status: e.status, phase, retry: decision.retry }, "model call failed");
    if (!decision.retry) {
      const outputStarted = this.state.current?.outputStarted ?? false;
      // Failover to the next target only before the first output reached the client.
      if (!outputStarted && e.kind !== "cancelled" && this.targetIndex + 1 < this.targets.length) {
        this.targetIndex++;
        this.retries = { connect: 0, stream: 0 };
        this.log.warn({ from: target.kind, to: this.targets[this.targetIndex]?.kind }, "failing over to the next target");
        this.queue.push({ ev: { type: "model_retry", notice: "", usage: e.partialUsage } });
        return true;
      }
      this.queue.push({
        ev: { type: "model_failed", error: runErrorFromProvider(e, target.credentialsSource, this.state.compactedInTurn), usage: e.partialUsage },
      });
      return false;
    }
    this.retries[phase]++;
    await sleep(decision.delayMs, controller.signal);
    if (controller.signal.aborted) return true;
    this.queue.push({
      ev: {
        type: "model_retry",
        notice: `\n\n[connection to the model was interrupted; reconnecting ${decision.retryNumber}/${decision.maxRetries} …]\n\n`,
        usage: e.partialUsage,
      },
    });
    return true;
  }
}

/** A model event that only streams output (text, thinking, tool arguments). */
function isStreamingDelta(ev: RunEvent): boolean {
  return ev.type === "model" && (ev.event.type === "text_delta" || ev.event.type === "reasoning_delta" || ev.event.type === "tool_call_delta");
}

function secretsOf(run: RunStart): string[] {
  const c = run.credentials;
  if (!c) return [];
  if (c.kind === "bedrock") return [c.accessKey, c.secretKey, ...(c.sessionToken ? [c.sessionToken] : [])];
  return [c.apiKey];
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}

export type { Usage };
