import { clone } from "@bufbuild/protobuf";
import { AgentRunRequestSchema, type AgentRunRequest, type ConversationStateStructure, type PrewarmRequest } from "@byok/wire";
import { blobKey, type Blob } from "./blobs.js";
import { frames } from "./frames.js";
import { enter } from "./phase.js";
import { gateBlobGets } from "./gate.js";
import { importedHistory, missingBlobs } from "./import.js";
import type { RunStart } from "./run-request.js";
import type { Draft, Effect, RunState } from "./run-types.js";
import { gated, modelCallIdFor } from "./transition.js";
import { startAttempt } from "./translate.js";

// Starting a run: the no-call actions, import of a client-held conversation, prewarm reuse.

/**
 * Starts the run proper: user entry, first checkpoint, first model call (or the no-call actions).
 * `baseBlobs`: blobs of a stored base state the client lacks, sent with the first checkpoint.
 */
export function beginRun(opened: RunState, baseBlobs: readonly Blob[] = []): { state: RunState; effects: Effect[] } {
  const s = opened;
  const run = opened.run!;
  const modelCallId = modelCallIdFor(s.generation, 1);
  const userEntry: Draft[] = run.userText
    ? [{ type: "record_history", entries: [{ kind: "user", body: { text: run.userText, messageId: run.messageId, mode: run.mode, action: run.kind }, interrupted: false }] }]
    : [];
  if (run.kind === "shell_command") {
    // Recorded into the conversation; no provider call.
    return gated(enter(opened, "model_call"), [
      { type: "record_history", entries: [{ kind: "user", body: { text: `The user ran a shell command: ${run.userText}`, action: run.kind }, interrupted: false }] },
      { type: "checkpoint", steps: [], baseBlobs },
      { type: "emit", frames: [frames.turnEnded(s.usage)] },
      { type: "end", decision: { ok: true } },
    ]);
  }
  const started: RunState = { ...enter(opened, "model_call"), modelCalls: 1, attempt: 1, current: startAttempt(modelCallId) };
  return gated(started, [
    ...userEntry,
    { type: "checkpoint", steps: [], baseBlobs },
    ...(run.kind === "summarize" ? [{ type: "emit" as const, frames: [frames.summaryStarted()] }] : []),
    // The run's first pass makes it its conversation's current run at once.
    { type: "mark_conversation_run", conversationId: run.conversationId },
    { type: "start_model_call", modelCallId, attempt: 1 },
  ]);
}

/** Import of a client-held conversation: resolve blobs (inline, verified pre-fetched, get_blob_args). */
export function continueImport(s: RunState, have: ReadonlyMap<string, Uint8Array>, pending: ReadonlyMap<number, string>): { state: RunState; effects: Effect[] } {
  const turns = s.run!.conversationState?.turns ?? [];
  const pendingKeys = new Set(pending.values());
  const missing = missingBlobs(turns, have).filter((id) => !pendingKeys.has(blobKey(id)));
  if (missing.length === 0 && pending.size === 0) return finishImport(s, have);
  if (missing.length === 0) return { state: { ...s, importing: { have, pending } }, effects: [] };
  const g = gateBlobGets(s.gate, missing);
  const all = new Map([...pending, ...g.kvIds]);
  return {
    state: { ...s, gate: g.gate, importing: { have, pending: all } },
    effects: [{ type: "emit", frames: g.frames }, { type: "import_wait" }],
  };
}

export function finishImport(s: RunState, have: ReadonlyMap<string, Uint8Array>): { state: RunState; effects: Effect[] } {
  const entries = importedHistory(s.run!.conversationState?.turns ?? [], have);
  const blobs = [...have].map(([k, data]) => ({ id: new Uint8Array(Buffer.from(k, "hex")), data }));
  const begun = beginRun(enter({ ...s, importing: undefined }, "awaiting_run"));
  const pre: Effect[] = [];
  if (blobs.length) pre.push({ type: "store_blobs", blobs });
  if (entries.length) pre.push({ type: "record_history", entries });
  return { state: begun.state, effects: [...pre, ...begun.effects] };
}

/**
 * A run_request without conversation_state (the client lost its state, or keeps none): the
 * conversation's latest stored checkpoint becomes the run's state, so the model sees the turns
 * it lists and the client gets them back, blobs included (docs/architecture.md "History").
 * Nothing stored: the run starts on the stored conversation as it is.
 */
export function continueFromStored(s: RunState, stored: { state: ConversationStateStructure; blobs: readonly Blob[] } | undefined): { state: RunState; effects: Effect[] } {
  const waiting = enter(s, "awaiting_run");
  if (!stored) return beginRun(waiting);
  return beginRun({ ...waiting, run: { ...s.run!, conversationState: stored.state }, storedBase: stored.state }, stored.blobs);
}

/**
 * The run_request after a prewarm: what it leaves out comes from the prewarm. A
 * conversation_state the run_request carries wins even with zero turns (the user restored the
 * chat to its very beginning after the prewarm; docs/architecture.md "History").
 */
export function withPrewarm(req: AgentRunRequest, p: PrewarmRequest): AgentRunRequest {
  const r = clone(AgentRunRequestSchema, req);
  if (!r.requestedModel?.modelId && !r.modelDetails?.modelId) {
    if (p.requestedModel) r.requestedModel = p.requestedModel;
    if (p.modelDetails) r.modelDetails = p.modelDetails;
  }
  if (!r.conversationState && p.conversationState) r.conversationState = p.conversationState;
  if (!r.conversationId && p.conversationId) r.conversationId = p.conversationId;
  if (!r.mcpTools?.mcpTools.length && p.mcpTools) r.mcpTools = p.mcpTools;
  if (r.customSystemPrompt === undefined && p.customSystemPrompt !== undefined) r.customSystemPrompt = p.customSystemPrompt;
  return r;
}

/** Blob ids the client's conversation_state references (its turns), as 32-byte ids. */
export function clientBlobIds(run: RunStart): Uint8Array[] {
  return (run.conversationState?.turns ?? []).filter((t) => t.byteLength === 32);
}
