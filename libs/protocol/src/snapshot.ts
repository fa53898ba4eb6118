import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { AgentServerMessageSchema, ConversationStateStructureSchema, ConversationStepSchema, TodoItemSchema, type ConversationStep } from "@byok/wire";
import type { ReasoningPart, ToolCallPart, Usage } from "./model/index.js";
import type { EndDecision } from "./errors.js";
import { stepBlob } from "./blobs.js";
import { openGate, restoreGate, snapshotGate, type GateSnapshot } from "./gate.js";
import type { RunStart } from "./run-request.js";
import type { Bridge, PendingTool, Phase, RunPolicy, RunState, ToolLoop } from "./run-types.js";
import { initialRunState } from "./machine.js";
import { isCallingModel, isSummarizing } from "./phase.js";
import { startShell, planToolCall, type EditState } from "./tools/index.js";
import { toolContextOf } from "./tool-loop.js";

/**
 * The durable form of a live run's state (docs/architecture.md property 5): what a new owner
 * needs after a takeover. JSON-safe except `steps`, which the engine saves as bytes beside its
 * JSON (libs/agent/src/snapshot.ts); other protobuf values travel as base64 binary. The run
 * request is not copied (the engine re-reads it from input). The output gate is, with the
 * output it holds behind checkpoints (never appended, so only the snapshot has it).
 */
export interface RunStateSnapshot {
  phase: Phase;
  modelCalls: number;
  attempt: number;
  /** ConversationStep bytes, one per step: the turn's bulk, kept out of JSON (no base64 or escaping scan per save). */
  steps: Uint8Array[];
  usage: Usage;
  current:
    | {
        modelCallId: string;
        text: string;
        thinkingText: string;
        thinkingMs: number;
        reasoning: ReasoningPart[];
        toolCalls: ToolCallPart[];
        outputStarted: boolean;
      }
    | undefined;
  gate: GateSnapshot;
  /** Snapshots of a worker before the gate was kept (a rolling upgrade): what it kept instead. */
  knownBlobs?: string[];
  heldEnd?: EndDecision;
  mode: number;
  /** TodoItem bytes, base64. */
  todos: string[];
  plan: RunState["plan"];
  tools:
    | {
        modelCallId: string;
        nextExecId: number;
        nextInteractionId: number;
        calls: { call: ToolCallPart; bridge: Bridge | undefined; done: boolean; edit: EditState | undefined }[];
      }
    | undefined;
  /** Compaction: in progress (what the summary pass covers), done this turn, the summary. */
  compacting: RunState["compacting"];
  compactedInTurn: boolean;
  summary: string | undefined;
  contextWindow: number | undefined;
  /** The stored checkpoint the run continues from (ConversationStateStructure bytes, base64). */
  storedBase: string | undefined;
}

const b64 = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64");
const unb64 = (s: string) => new Uint8Array(Buffer.from(s, "base64"));

export function snapshotRunState(s: RunState): RunStateSnapshot {
  const c = s.current;
  return {
    phase: s.phase,
    modelCalls: s.modelCalls,
    attempt: s.attempt,
    // Serialized once per step (blobs.ts `stepBlob`), shared, not copied.
    steps: s.steps.map((m) => stepBlob(m).data),
    usage: s.usage,
    current: c && {
      modelCallId: c.modelCallId, text: c.text, thinkingText: c.thinkingText, thinkingMs: c.thinkingMs,
      reasoning: [...c.reasoning], toolCalls: [...c.toolCalls], outputStarted: c.outputStarted,
    },
    gate: snapshotGate(s.gate),
    mode: s.mode,
    todos: s.todos.map((t) => b64(toBinary(TodoItemSchema, t))),
    plan: s.plan,
    tools: s.tools && {
      modelCallId: s.tools.modelCallId,
      nextExecId: s.tools.nextExecId,
      nextInteractionId: s.tools.nextInteractionId,
      calls: s.tools.calls.map((p) => ({ call: p.call, bridge: p.bridge, done: p.done, edit: p.edit })),
    },
    compacting: s.compacting,
    compactedInTurn: s.compactedInTurn,
    summary: s.summary,
    contextWindow: s.contextWindow,
    storedBase: s.storedBase && b64(toBinary(ConversationStateStructureSchema, s.storedBase)),
  };
}

/**
 * Rebuilds the state a previous owner had, compaction included, so the new owner's next pass
 * is built from the same summary, tail and window as the first owner's. Tool calls are re-planned from the model's calls
 * (planning is pure), keeping their bridge ids so the client's answers still match; a shell
 * call restarts its output aggregation. Open thinking restarts closed.
 */
export function restoreRunState(requestId: string, generation: number, policy: RunPolicy, snap: RunStateSnapshot, run: RunStart | undefined): RunState {
  const storedBase = snap.storedBase === undefined ? undefined : fromBinary(ConversationStateStructureSchema, unb64(snap.storedBase));
  const base: RunState = {
    ...initialRunState(requestId, generation, policy),
    phase: snap.phase,
    // The run continues from the same stored checkpoint as the first owner (not a later one).
    run: run && storedBase ? { ...run, conversationState: storedBase } : run,
    storedBase,
    compacting: snap.compacting,
    compactedInTurn: snap.compactedInTurn ?? false, // absent in snapshots of an older worker
    summary: snap.summary,
    contextWindow: snap.contextWindow,
    modelCalls: snap.modelCalls,
    attempt: snap.attempt,
    steps: snap.steps.map((x) => fromBinary(ConversationStepSchema, x).message as ConversationStep["message"]),
    usage: snap.usage,
    current: snap.current ? { ...snap.current, thinkingSince: undefined, completed: undefined } : undefined,
    gate: snap.gate ? restoreGate(snap.gate) : legacyGate(snap),
    mode: snap.mode,
    todos: snap.todos.map((x) => fromBinary(TodoItemSchema, unb64(x))),
    plan: snap.plan,
  };
  if (!snap.tools) return base;
  const ctx = toolContextOf(base, 0);
  const calls: PendingTool[] = snap.tools.calls.map((c) => {
    const plan = planToolCall(c.call, ctx);
    return {
      call: c.call,
      callId: c.call.id,
      toolName: c.call.name,
      plan,
      bridge: c.bridge,
      done: c.done,
      edit: c.edit,
      shell: plan.kind === "exec" && plan.streaming && !c.done ? startShell(plan, snap.tools!.modelCallId) : undefined,
      execPlan: undefined,
    };
  });
  const tools: ToolLoop = { modelCallId: snap.tools.modelCallId, nextExecId: snap.tools.nextExecId, nextInteractionId: snap.tools.nextInteractionId, calls };
  return { ...base, tools };
}

/** The gate of an older worker's snapshot: the blobs the client had and the end it held. */
function legacyGate(snap: RunStateSnapshot): RunState["gate"] {
  return { ...openGate(), known: new Set(snap.knownBlobs ?? []), held: snap.heldEnd ? [{ kind: "end", decision: snap.heldEnd }] : [] };
}

/**
 * The cut pass as the client saw it. While a pass only streams (deltas, output items opening),
 * no snapshot follows it (libs/agent/src/run/snapshots.ts), so a snapshot saved during the
 * pass holds its text as of that save; the output stream holds the rest. `tail` is the
 * generation's output after the snapshot's `outputFrames`: every frame there came from batches
 * of the same pass (any other event saves a snapshot with its batch's frames), so its text and
 * thinking deltas (not server notices, which are the gateway's) and its closed thinking time
 * belong to the cut attempt. Its interrupted history entry, its checkpoint steps and its
 * estimated usage then match what the client was sent. A summary pass streams nothing: unchanged.
 */
export function withStreamedTail(s: RunState, tail: readonly Uint8Array[]): RunState {
  const cut = s.current;
  if (!cut || tail.length === 0 || !isCallingModel(s) || isSummarizing(s)) return s;
  let text = "";
  let thinking = "";
  let thinkingMs = 0;
  for (const bytes of tail) {
    const m = fromBinary(AgentServerMessageSchema, bytes).message;
    if (m.case !== "interactionUpdate") continue;
    const u = m.value.message;
    if (u.case === "textDelta" && !u.value.isServerNotice) text += u.value.text;
    else if (u.case === "thinkingDelta") thinking += u.value.text;
    else if (u.case === "thinkingCompleted") thinkingMs += u.value.thinkingDurationMs;
  }
  if (!text && !thinking && !thinkingMs) return s;
  return { ...s, current: { ...cut, text: cut.text + text, thinkingText: cut.thinkingText + thinking, thinkingMs: cut.thinkingMs + thinkingMs, outputStarted: true } };
}
