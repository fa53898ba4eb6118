import type { ExecClientControlMessage, ExecClientMessage, InteractionResponse, InterruptedPendingToolCallResolution, ToolCall } from "@byok/wire";
import type { ToolCallPart } from "./model/index.js";
import { frames } from "./frames.js";
import { enter } from "./phase.js";
import type { TurnView } from "./checkpoint.js";
import type { Draft, HistoryRecord, PendingTool, RunState, ToolLoop } from "./run-types.js";
import {
  applyShellEvent, completeAwaitShell, completeExec, completeInteraction, completeWebSearch, continueEdit, failShell,
  interruptedOutcome, planToolCall, startShell, toolErrorOutcome,
  type ExecPlan, type ExecRequest, type InteractionPlan, type ToolContext, type ToolOutcome,
} from "./tools/index.js";

/**
 * The tool phase of a run (docs/protocol.md "Bridges"): the tool calls of one model pass, each
 * planned by the pure tool layer, sent to the client through the exec or interaction bridge
 * (or resolved by the server), and completed from the client's answers. When every call of
 * the pass is done, the next model pass starts with the results in history.
 *
 * Frame order per call: tool_call_started → checkpoint (call in pending_tool_calls) →
 * exec_server_message / interaction_query; on the result: tool_call_completed → checkpoint.
 * Its state types (ToolLoop, PendingTool, Bridge) are in run-types.ts.
 */

type Step = { state: RunState; drafts: Draft[] };

/** Tool context of the run's current mode and policies. */
export function toolContextOf(s: RunState, nowMs: number): ToolContext {
  const run = s.run;
  return {
    mode: s.mode,
    mcpTools: run?.mcpTools ?? [],
    isSubagent: run?.isSubagent ?? false,
    webSearchEnabled: s.policy.webSearch && (run?.webSearchAllowed ?? false),
    webFetchEnabled: run?.webFetchAllowed ?? false,
    todos: s.todos,
    nowMs,
  };
}

function nextId(n: number): number {
  return n >= 0xffffffff ? 1 : n + 1;
}

function withCall(loop: ToolLoop, callId: string, f: (c: PendingTool) => PendingTool): ToolLoop {
  return { ...loop, calls: loop.calls.map((c) => (c.callId === callId ? f(c) : c)) };
}

/** Starts the tool calls of a completed pass. `state.tools` must hold the counters to continue from. */
export function startTools(s: RunState, calls: readonly ToolCallPart[], modelCallId: string, nowMs: number): Step {
  const ctx = toolContextOf(s, nowMs);
  let nextExecId = s.tools?.nextExecId ?? 1;
  let nextInteractionId = s.tools?.nextInteractionId ?? 1;
  const pending: PendingTool[] = [];
  const started: Draft[] = [];
  const bridges: Draft[] = [];
  const immediate: { callId: string; outcome: ToolOutcome }[] = [];
  for (const call of calls) {
    const plan = planToolCall(call, ctx);
    const base = { call, callId: call.id, toolName: call.name, plan, shell: undefined, edit: undefined, execPlan: undefined };
    switch (plan.kind) {
      case "refused":
      case "local":
        started.push({ type: "emit", frames: [frames.toolCallStarted(call.id, modelCallId, plan.kind === "local" ? plan.started : plan.outcome.completed)] });
        pending.push({ ...base, bridge: undefined, done: false });
        immediate.push({ callId: call.id, outcome: plan.outcome });
        break;
      case "exec":
      case "edit": {
        const id = nextExecId;
        nextExecId = nextId(nextExecId);
        const execId = `${modelCallId}-x${id}`;
        started.push({ type: "emit", frames: [frames.toolCallStarted(call.id, modelCallId, plan.started)] });
        bridges.push({ type: "emit", frames: [frames.exec(id, execId, plan.exec)] });
        bridges.push({ type: "tool_timer", callId: call.id, bridgeId: id, ms: s.policy.toolTimeoutMs });
        pending.push({
          ...base,
          bridge: { kind: "exec", id, execId },
          shell: plan.kind === "exec" && plan.streaming ? startShell(plan, modelCallId) : undefined,
          edit: plan.kind === "edit" ? plan.state : undefined,
          done: false,
        });
        break;
      }
      case "interaction": {
        const id = nextInteractionId;
        nextInteractionId = nextId(nextInteractionId);
        started.push({ type: "emit", frames: [frames.toolCallStarted(call.id, modelCallId, plan.started)] });
        // Questions wait for a person: no timeout.
        bridges.push({ type: "emit", frames: [frames.interactionQuery(id, plan.query)] });
        pending.push({ ...base, bridge: { kind: "interaction", id }, done: false });
        break;
      }
      case "await_shell": {
        const id = nextExecId;
        nextExecId = nextId(nextExecId);
        started.push({ type: "emit", frames: [frames.toolCallStarted(call.id, modelCallId, plan.started)] });
        bridges.push({ type: "tool_timer", callId: call.id, bridgeId: id, ms: plan.blockUntilMs });
        pending.push({ ...base, bridge: { kind: "await", id }, done: false });
        break;
      }
    }
  }
  let state: RunState = enter({ ...s, tools: { modelCallId, nextExecId, nextInteractionId, calls: pending } }, "tools");
  const waiting = pending.filter((p) => !immediate.some((i) => i.callId === p.callId)).map((p) => p.callId);
  const drafts: Draft[] = [...started];
  if (waiting.length) drafts.push({ type: "checkpoint", steps: state.steps, pendingToolCalls: waiting }, ...bridges);
  for (const i of immediate) {
    const r = finishCall(state, i.callId, i.outcome);
    state = r.state;
    drafts.push(...r.drafts);
  }
  return { state, drafts };
}

/** A call is done: tool_call_completed, history, checkpoint; the next pass once all are done. */
function finishCall(s: RunState, callId: string, outcome: ToolOutcome): Step {
  const loop = s.tools;
  const call = loop?.calls.find((c) => c.callId === callId);
  if (!loop || !call || call.done) return { state: s, drafts: [] };
  const calls = loop.calls.map((c) => (c.callId === callId ? { ...c, done: true, bridge: undefined } : c));
  const steps = [...s.steps, { case: "toolCall" as const, value: outcome.completed }];
  let next: RunState = { ...s, steps, tools: { ...loop, calls } };
  const fx = outcome.effects;
  if (fx?.todos) next = { ...next, todos: fx.todos };
  if (fx?.mode !== undefined) next = { ...next, mode: fx.mode };
  if (fx?.plan) next = { ...next, plan: fx.plan };
  const pendingIds = calls.filter((c) => !c.done).map((c) => c.callId);
  const drafts: Draft[] = [
    { type: "emit", frames: [frames.toolCallCompleted(callId, loop.modelCallId, outcome.completed)] },
    {
      type: "record_history",
      entries: [{ kind: "tool", body: { toolCallId: callId, name: call.toolName, output: outcome.modelText, isError: outcome.isError }, interrupted: false }],
    },
    { type: "checkpoint", steps, pendingToolCalls: pendingIds },
  ];
  if (pendingIds.length > 0) return { state: next, drafts };
  // Every call of the pass is answered: the next model pass, with the results in history.
  return { state: next, drafts: [...drafts, { type: "next_pass" }] };
}

function findByExecId(loop: ToolLoop | undefined, id: number): PendingTool | undefined {
  return loop?.calls.find((c) => !c.done && c.bridge?.kind === "exec" && c.bridge.id === id);
}

/** Sends the next exec of a call (edit steps, approved web fetch) on a fresh bridge id. */
function sendExec(s: RunState, call: PendingTool, exec: ExecRequest, patch: Partial<PendingTool>): Step {
  const loop = s.tools!;
  const id = loop.nextExecId;
  const execId = `${loop.modelCallId}-x${id}`;
  const tools = withCall({ ...loop, nextExecId: nextId(id) }, call.callId, (c) => ({ ...c, ...patch, bridge: { kind: "exec", id, execId } }));
  return {
    state: { ...s, tools },
    drafts: [
      { type: "emit", frames: [frames.exec(id, execId, exec)] },
      { type: "tool_timer", callId: call.callId, bridgeId: id, ms: s.policy.toolTimeoutMs },
    ],
  };
}

/** `exec_client_message`: results matched by id (and exec_id when the client sent one). Unknown ids are ignored. */
export function onExecMessage(s: RunState, m: ExecClientMessage): Step {
  const call = findByExecId(s.tools, m.id);
  if (!call || call.bridge?.kind !== "exec" || (m.execId && m.execId !== call.bridge.execId)) {
    return { state: s, drafts: [{ type: "log", level: "info", message: "exec result for an unknown exec id ignored", fields: { id: m.id } }] };
  }
  const result = m.message;
  if (call.shell) {
    if (result.case !== "shellStream") return finishCall(s, call.callId, toolErrorOutcome(call.plan as ExecPlan, `the client answered a shell command with ${result.case ?? "nothing"}`));
    const r = applyShellEvent(call.shell, result.value);
    const state = { ...s, tools: withCall(s.tools!, call.callId, (c) => ({ ...c, shell: r.agg })) };
    const drafts: Draft[] = r.updates.length ? [{ type: "emit", frames: r.updates.map((u) => frames.interactionUpdate(u)) }] : [];
    if (!r.done) return { state, drafts };
    const f = finishCall(state, call.callId, r.done);
    return { state: f.state, drafts: [...drafts, ...f.drafts] };
  }
  if (call.edit) {
    const r = continueEdit(call.edit, result);
    if (r.kind === "done") return finishCall(s, call.callId, r.outcome);
    return sendExec(s, call, r.exec, { edit: r.state });
  }
  const plan = call.execPlan ?? (call.plan.kind === "exec" ? call.plan : undefined);
  if (!plan) return { state: s, drafts: [] };
  return finishCall(s, call.callId, completeExec(plan, result));
}

/** `exec_client_control_message`: stream_close (an ack for non-streaming execs), throw, heartbeat. */
export function onExecControl(s: RunState, m: ExecClientControlMessage): Step {
  const c = m.message;
  if (c.case === undefined || c.case === "heartbeat") return { state: s, drafts: [] };
  const call = findByExecId(s.tools, c.value.id);
  if (!call) return { state: s, drafts: [] };
  if (c.case === "streamClose") {
    // Only a streaming exec ends with its stream; for the others keep waiting for the result.
    if (!call.shell) return { state: s, drafts: [] };
    const r = failShell(call.shell, "the command's output stream closed before it exited");
    return r.done ? finishCall(s, call.callId, r.done) : { state: s, drafts: [] };
  }
  const message = `the client could not run the tool: ${c.value.error}`;
  if (call.shell) {
    const r = failShell(call.shell, message);
    if (r.done) return finishCall(s, call.callId, r.done);
  }
  return finishCall(s, call.callId, toolErrorOutcome(call.plan as ExecPlan, message));
}

/** `interaction_response`: a branch that does not answer the query is an error, not an answer. */
export function onInteractionResponse(s: RunState, m: InteractionResponse): Step {
  const call = s.tools?.calls.find((c) => !c.done && c.bridge?.kind === "interaction" && c.bridge.id === m.id);
  if (!call || call.plan.kind !== "interaction") {
    return { state: s, drafts: [{ type: "log", level: "info", message: "interaction response for an unknown id ignored", fields: { id: m.id } }] };
  }
  const plan: InteractionPlan = call.plan;
  const r = completeInteraction(plan, m.result);
  switch (r.kind) {
    case "outcome":
      return finishCall(s, call.callId, r.outcome);
    case "exec":
      return sendExec(s, call, r.plan.exec, { execPlan: r.plan });
    case "web_search": {
      const tools = withCall(s.tools!, call.callId, (c) => ({ ...c, bridge: { kind: "web_search", id: m.id } }));
      return { state: { ...s, tools }, drafts: [{ type: "web_search", callId: call.callId, query: r.args.searchTerm }] };
    }
    case "mismatch":
      return finishCall(s, call.callId, toolErrorOutcome({ started: plan.started }, r.message));
  }
}

export function onWebSearchResult(s: RunState, callId: string, result: Parameters<typeof completeWebSearch>[1]): Step {
  const call = s.tools?.calls.find((c) => c.callId === callId && !c.done && c.bridge?.kind === "web_search");
  if (!call || call.plan.kind !== "interaction") return { state: s, drafts: [] };
  return finishCall(s, callId, completeWebSearch(call.plan, result));
}

/** A tool's wait ran out: an exec gets aborted and the model a clear tool error; AwaitShell reports still running. */
export function onToolTimeout(s: RunState, callId: string, bridgeId: number): Step {
  const call = s.tools?.calls.find((c) => c.callId === callId && !c.done && c.bridge !== undefined && c.bridge.id === bridgeId);
  if (!call || !call.bridge) return { state: s, drafts: [] };
  if (call.bridge.kind === "await" && call.plan.kind === "await_shell") {
    return finishCall(s, callId, completeAwaitShell(call.plan, { kind: "still_running", runtimeMs: call.plan.blockUntilMs }));
  }
  const seconds = Math.round(s.policy.toolTimeoutMs / 1000);
  const message = `the tool did not answer within ${seconds} s and was aborted`;
  const abort: Draft = { type: "emit", frames: [frames.execAbort(call.bridge.id)] };
  const outcome = call.shell ? failShell(call.shell, message).done : undefined;
  const f = finishCall(s, callId, outcome ?? toolErrorOutcome({ started: call.plan.kind === "refused" ? call.plan.outcome.completed : call.plan.started }, message));
  return { state: f.state, drafts: [abort, ...f.drafts] };
}

/** Cancel: `exec_server_control_message.abort` for every pending exec. */
export function abortPendingExecs(s: RunState): Draft[] {
  const ids = (s.tools?.calls ?? []).flatMap((c) => (!c.done && c.bridge?.kind === "exec" ? [c.bridge.id] : []));
  return ids.length ? [{ type: "emit", frames: ids.map((id) => frames.execAbort(id)) }] : [];
}

/** Calls of the pass still waiting for the client. */
function pendingToolCalls(s: RunState): { callId: string; toolName: string; started: ToolCall }[] {
  return (s.tools?.calls ?? []).flatMap((c) =>
    !c.done ? [{ callId: c.callId, toolName: c.toolName, started: c.plan.kind === "refused" ? c.plan.outcome.completed : c.plan.started }] : [],
  );
}

/**
 * The run ends while calls of its pass still wait: each gets its result now (interruptedOutcome:
 * the client's resolution when it sent one), as a completed step and a tool entry in history,
 * so the conversation stays one a provider accepts (docs/architecture.md "History").
 */
export function interruptPendingCalls(
  s: RunState,
  reason: string,
  resolutions: readonly InterruptedPendingToolCallResolution[],
): { steps: TurnView["steps"]; entries: HistoryRecord[] } {
  const steps: TurnView["steps"] = [];
  const entries: HistoryRecord[] = [];
  for (const call of pendingToolCalls(s)) {
    const o = interruptedOutcome(call, reason, resolutions.find((r) => r.toolCallId === call.callId));
    steps.push({ case: "toolCall", value: o.completed });
    entries.push({ kind: "tool", body: { toolCallId: call.callId, name: call.toolName, output: o.modelText, isError: o.isError }, interrupted: false });
  }
  return { steps, entries };
}

/** background_shell / background_subagent: the run stops waiting for that tool call. */
export function backgroundCall(s: RunState, toolCallId: string): Step {
  const call = s.tools?.calls.find((c) => c.callId === toolCallId && !c.done);
  if (!call || call.plan.kind === "refused") return { state: s, drafts: [] };
  const outcome: ToolOutcome = {
    modelText: `${call.toolName} continues in the background (tool call ${toolCallId}); its completion arrives later. Use AwaitShell to wait for a background shell.`,
    isError: false,
    completed: call.plan.started,
  };
  return finishCall(s, toolCallId, outcome);
}

/** cancel_subagent: aborts the pending subagent exec whose tool call id is `subagentId`. */
export function cancelSubagent(s: RunState, subagentId: string): Step {
  const call = s.tools?.calls.find((c) => c.callId === subagentId && !c.done && c.bridge?.kind === "exec");
  if (!call || call.bridge?.kind !== "exec" || call.plan.kind === "refused") return { state: s, drafts: [] };
  const f = finishCall(s, subagentId, toolErrorOutcome({ started: call.plan.started }, "the user canceled this subagent"));
  return { state: f.state, drafts: [{ type: "emit", frames: [frames.execAbort(call.bridge.id)] }, ...f.drafts] };
}

/**
 * background_task_completion on a live run: wakes an AwaitShell waiting on that shell (task id
 * = shell id) with its completion instead of waiting out `block_until_ms`.
 */
export function onBackgroundCompletions(s: RunState, completions: readonly { taskId: string; detail?: string | undefined; outputPath?: string | undefined }[]): Step {
  let state = s;
  const drafts: Draft[] = [];
  for (const c of completions) {
    const call = state.tools?.calls.find((p) => !p.done && p.plan.kind === "await_shell" && String(p.plan.shellId) === c.taskId);
    if (!call || call.plan.kind !== "await_shell") continue;
    const r = finishCall(state, call.callId, completeAwaitShell(call.plan, {
      kind: "completed",
      runtimeMs: 0,
      ...(c.detail ? { output: c.detail } : {}),
      ...(c.outputPath ? { outputFilePath: c.outputPath } : {}),
    }));
    state = r.state;
    drafts.push(...r.drafts);
  }
  return { state, drafts };
}

/** Timers of the calls still waiting (after a takeover): full tool timeout, AwaitShell's block. */
export function restartToolTimers(s: RunState): { type: "tool_timer"; callId: string; bridgeId: number; ms: number }[] {
  return (s.tools?.calls ?? []).flatMap((c) => {
    if (c.done || !c.bridge) return [];
    if (c.bridge.kind === "exec") return [{ type: "tool_timer" as const, callId: c.callId, bridgeId: c.bridge.id, ms: s.policy.toolTimeoutMs }];
    if (c.bridge.kind === "await" && c.plan.kind === "await_shell") return [{ type: "tool_timer" as const, callId: c.callId, bridgeId: c.bridge.id, ms: c.plan.blockUntilMs }];
    return [];
  });
}
