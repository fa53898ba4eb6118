import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  AgentClientMessageSchema, AgentMode, AgentServerMessageSchema, ConversationTurnStructureSchema, ErrorDetails_Error, type AgentServerMessage,
} from "@byok/wire";
import type { RunStateSnapshot, Usage } from "../src/index.js";
import {
  classifyClientMessage, decodeClientMessage, initialRunState, isCallingModel, NOTICE, isFinishing, isInTurn, isRunningTools, step,
  type Effect, type RunEvent, type RunState, type Transition,
} from "../src/index.js";

/** A snapshot as a new owner reads it: JSON-safe fields through JSON, the steps as copied bytes (the engine saves them beside the JSON). */
const saved = (s: RunStateSnapshot): RunStateSnapshot => ({ ...(JSON.parse(JSON.stringify({ ...s, steps: [] })) as RunStateSnapshot), steps: s.steps.map((b) => b.slice()) });

const usage: Usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 2, cacheWriteTokens: 0, reasoningTokens: 1, estimated: false };

function runRequestEvent(text: string): RunEvent {
  const msg = create(AgentClientMessageSchema, {
    message: {
      case: "runRequest",
      value: {
        conversationId: "conv-1",
        // A new conversation: a state with zero turns (no stored checkpoint to read).
        conversationState: {},
        action: { action: { case: "userMessageAction", value: { userMessage: { text, messageId: "m1", mode: AgentMode.AGENT } } } },
        requestedModel: { modelId: "gpt-test" },
        modelDetails: { modelId: "legacy-model" },
      },
    },
  });
  const decoded = decodeClientMessage(toBinary(AgentClientMessageSchema, msg));
  if (!decoded.ok) throw new Error(decoded.reason);
  return { type: "client", event: classifyClientMessage(decoded.message) };
}

/** Feeds events; like a Cursor client, acknowledges every set_blob_args at once (unless told not to). */
function run(events: RunEvent[], opts: { ackKv: boolean } = { ackKv: true }): { state: RunState; effects: Effect[]; transitions: Transition[] } {
  let state = initialRunState("req-1", 1);
  const effects: Effect[] = [];
  const transitions: Transition[] = [];
  const queue = [...events];
  while (queue.length) {
    const r = step(state, queue.shift()!);
    state = r.state;
    effects.push(...r.effects);
    if (r.transition) transitions.push(r.transition);
    if (!opts.ackKv) continue;
    const acks: RunEvent[] = [];
    for (const f of r.effects.flatMap((e) => (e.type === "emit" ? e.frames : []))) {
      if (f.message.case !== "kvServerMessage") continue;
      const ack = create(AgentClientMessageSchema, { message: { case: "kvClientMessage", value: { id: f.message.value.id, message: { case: "setBlobResult", value: {} } } } });
      acks.push({ type: "client", event: classifyClientMessage(ack) });
    }
    queue.unshift(...acks);
  }
  return { state, effects, transitions };
}

/** Emitted frames, without the KV handshake frames. */
function emitted(effects: Effect[]): AgentServerMessage[] {
  return effects.flatMap((e) => (e.type === "emit" ? e.frames : [])).filter((f) => f.message.case !== "kvServerMessage");
}

function describeFrame(m: AgentServerMessage): string {
  if (m.message.case === "interactionUpdate") return m.message.value.message.case ?? "?";
  return m.message.case ?? "?";
}

describe("run state machine", () => {
  it("drives the first path: checkpoint → thinking → text → checkpoint → turn_ended → end {}", () => {
    const { state, effects } = run([
      runRequestEvent("hello"),
      { type: "model", event: { type: "item_added", itemId: "r", kind: "reasoning" }, nowMs: 1000 },
      { type: "model", event: { type: "reasoning_delta", itemId: "r", text: "hmm" }, nowMs: 1001 },
      { type: "model", event: { type: "item_done", item: { kind: "reasoning", id: "r", part: { text: "hmm" } } }, nowMs: 1250 },
      { type: "model", event: { type: "text_delta", itemId: "t", text: "Hi " }, nowMs: 1300 },
      { type: "model", event: { type: "text_delta", itemId: "t", text: "there" }, nowMs: 1301 },
      { type: "model", event: { type: "completed", usage, endTurn: true }, nowMs: 1400 },
    ]);
    expect(state.phase).toBe("ended");
    const frames = emitted(effects);
    expect(frames.map(describeFrame)).toEqual([
      "conversationCheckpointUpdate", "thinkingDelta", "thinkingCompleted", "textDelta", "textDelta",
      "conversationCheckpointUpdate", "turnEnded",
    ]);
    const tc = frames[2]!;
    expect(tc.message.case === "interactionUpdate" && tc.message.value.message.case === "thinkingCompleted" && tc.message.value.message.value.thinkingDurationMs).toBe(250);
    const te = frames[6]!;
    if (te.message.case !== "interactionUpdate" || te.message.value.message.case !== "turnEnded") throw new Error("no turn_ended");
    expect(te.message.value.message.value.inputTokens).toBe(10n);
    expect(te.message.value.message.value.cacheReadTokens).toBe(2n);
    const final = frames[5]!;
    if (final.message.case !== "conversationCheckpointUpdate") throw new Error("no checkpoint");
    // Turns are referenced by blob id; the blob went to the client (and the store) first.
    const turnId = final.message.value.turns[0]!;
    expect(turnId.byteLength).toBe(32);
    const stored = effects.flatMap((e) => (e.type === "store_blobs" ? e.blobs : []));
    const turnBlob = stored.find((b) => Buffer.from(b.id).equals(Buffer.from(turnId)));
    expect(turnBlob).toBeDefined();
    const turn = fromBinary(ConversationTurnStructureSchema, turnBlob!.data);
    expect(turn.turn.case === "agentConversationTurn" && turn.turn.value.steps.length).toBe(2);
    expect(effects.at(-1)).toEqual({ type: "end", decision: { ok: true } });
    const starts = effects.filter((e) => e.type === "start_model_call");
    expect(starts).toEqual([{ type: "start_model_call", modelCallId: "g1m1", attempt: 1 }]);
    expect(state.run?.modelId).toBe("gpt-test"); // requested_model wins over model_details
  });

  it("tells the user before re-running a call whose output was already seen, and sums usage", () => {
    const { effects } = run([
      runRequestEvent("x"),
      { type: "model", event: { type: "text_delta", itemId: "t", text: "partial" }, nowMs: 1 },
      { type: "model_retry", retry: { retryNumber: 1, maxRetries: 5 }, usage },
      { type: "model", event: { type: "text_delta", itemId: "t", text: "full" }, nowMs: 2 },
      { type: "model", event: { type: "completed", usage, endTurn: true }, nowMs: 3 },
    ]);
    const frames = emitted(effects);
    expect(frames.map(describeFrame)).toEqual([
      "conversationCheckpointUpdate", "textDelta", "textDelta", "textDelta", "conversationCheckpointUpdate", "turnEnded",
    ]);
    const notice = frames[2]!;
    if (notice.message.case !== "interactionUpdate" || notice.message.value.message.case !== "textDelta") throw new Error("no notice");
    expect(notice.message.value.message.value).toMatchObject({ isServerNotice: true, text: NOTICE.reconnecting(1, 5) });
    expect(NOTICE.reconnecting(1, 5)).toMatch(/^\n\n\[connection to the model was interrupted; reconnecting 1\/5 …\]\n\n$/);
    const history = effects.flatMap((e) => (e.type === "record_history" ? e.entries : []));
    expect(history.map((h) => [h.kind, h.interrupted, h.body.text])).toEqual([
      ["user", false, "x"], ["assistant", true, "partial"], ["assistant", false, "full"],
    ]);
    const te = frames[5]!;
    expect(te.message.case === "interactionUpdate" && te.message.value.message.case === "turnEnded" && te.message.value.message.value.inputTokens).toBe(20n);
  });

  it("a failover (a re-run before any output) shows no notice", () => {
    const { effects } = run([runRequestEvent("x"), { type: "model_retry", retry: undefined, usage: undefined }]);
    expect(emitted(effects).map(describeFrame)).toEqual(["conversationCheckpointUpdate"]);
    expect(effects.filter((e) => e.type === "start_model_call").map((e) => e.type === "start_model_call" && e.attempt)).toEqual([1, 2]);
  });

  it("marks the run its conversation's current one with its first pass, once", () => {
    const { effects } = run([
      runRequestEvent("x"),
      { type: "model_retry", retry: { retryNumber: 1, maxRetries: 5 }, usage: undefined },
      { type: "model", event: { type: "completed", usage, endTurn: true }, nowMs: 1 },
    ]);
    const kinds = effects.map((e) => e.type).filter((t) => t === "mark_conversation_run" || t === "start_model_call");
    expect(kinds).toEqual(["mark_conversation_run", "start_model_call", "start_model_call"]);
    expect(effects.find((e) => e.type === "mark_conversation_run")).toEqual({ type: "mark_conversation_run", conversationId: "conv-1" });
  });

  it("cancels: aborts the call, keeps partial output, ends canceled without turn_ended", () => {
    const cancel = create(AgentClientMessageSchema, {
      message: { case: "conversationAction", value: { action: { case: "cancelAction", value: { reason: "stop" } } } },
    });
    const { effects } = run([
      runRequestEvent("x"),
      { type: "model", event: { type: "text_delta", itemId: "t", text: "part" }, nowMs: 1 },
      { type: "client", event: classifyClientMessage(cancel) },
    ]);
    expect(effects.some((e) => e.type === "abort_model_call")).toBe(true);
    expect(emitted(effects).map(describeFrame)).not.toContain("turnEnded");
    const end = effects.at(-1);
    expect(end?.type === "end" && end.decision.code).toBe("canceled");
  });

  it("maps a provider failure to the error table", () => {
    const { effects } = run([runRequestEvent("x"), { type: "model_failed", error: { kind: "provider_unavailable", message: "boom" }, usage: undefined }]);
    const end = effects.at(-1);
    if (end?.type !== "end") throw new Error("no end");
    expect(end.decision).toMatchObject({ ok: false, code: "unavailable", detail: { error: ErrorDetails_Error.PROVIDER_ERROR, isRetryable: true } });
  });

  it("accepts heartbeats and unknown branches without breaking the run, logging unknown once", () => {
    const unknown = fromBinary(AgentClientMessageSchema, new Uint8Array([0xc8, 0x01, 0x01])); // field 25, varint 1
    const hb = create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } });
    const { state, effects } = run([
      runRequestEvent("x"),
      { type: "client", event: classifyClientMessage(unknown) },
      { type: "client", event: classifyClientMessage(unknown) },
      { type: "client", event: classifyClientMessage(hb) },
    ]);
    expect(state.phase).toBe("model_call");
    expect(effects.filter((e) => e.type === "log")).toHaveLength(1);
    expect(classifyClientMessage(unknown)).toEqual({ kind: "unknown", unknownFieldNumbers: [25] });
  });

  it("refuses bytes that are not an AgentClientMessage", () => {
    expect(decodeClientMessage(new Uint8Array([0x0a, 0x05, 0x01])).ok).toBe(false);
  });
});

describe("checkpoint publication through KV", () => {
  it("publishes a checkpoint only after every blob is acknowledged, and ends after the final one", () => {
    const { state, effects } = run(
      [runRequestEvent("x"), { type: "model", event: { type: "completed", usage, endTurn: true }, nowMs: 1 }],
      { ackKv: false },
    );
    // Nothing acknowledged: no checkpoint frame, no turn_ended, the run is finishing.
    expect(emitted(effects).map(describeFrame)).toEqual([]);
    expect(state.phase).toBe("finishing");
    const kvWaits = effects.filter((e) => e.type === "kv_wait");
    expect(kvWaits.length).toBeGreaterThan(0);
    // The wait of the final checkpoint runs out: it is skipped, turn_ended and the end still come.
    const last = kvWaits.at(-1)!;
    if (last.type !== "kv_wait") throw new Error("unreachable");
    const r = step(state, { type: "kv_timeout", seq: last.seq });
    expect(emitted(r.effects).map(describeFrame)).toEqual(["turnEnded"]);
    expect(r.effects.at(-1)).toEqual({ type: "end", decision: { ok: true } });
    expect(r.state.phase).toBe("ended");
  });

  it("does not resend blobs the client already has", () => {
    const { effects } = run([
      runRequestEvent("x"),
      { type: "model", event: { type: "text_delta", itemId: "t", text: "a" }, nowMs: 1 },
      { type: "model", event: { type: "completed", usage, endTurn: true }, nowMs: 2 },
    ]);
    const sent = effects.flatMap((e) => (e.type === "store_blobs" ? e.blobs : [])).map((b) => Buffer.from(b.id).toString("hex"));
    expect(new Set(sent).size).toBe(sent.length);
  });
});

describe("takeover while waiting on tools", () => {
  it("restarts the tool timers of pending execs", async () => {
    const { snapshotRunState, restoreRunState, DEFAULT_RUN_POLICY } = await import("../src/index.js");
    const { state } = run([
      runRequestEvent("x"),
      {
        type: "model",
        event: { type: "item_done", item: { kind: "tool_call", id: "c1", call: { id: "c1", name: "Read", argumentsJson: JSON.stringify({ path: "a.txt" }) } } },
        nowMs: 1,
      },
      { type: "model", event: { type: "completed", usage, endTurn: false }, nowMs: 2 },
    ]);
    expect(state.phase).toBe("tools");
    // JSON round trip, as the bus stores it.
    const snap = saved(snapshotRunState(state));
    const restored = restoreRunState("req-1", 1, DEFAULT_RUN_POLICY, snap, state.run);
    expect(restored.tools?.calls[0]?.bridge).toEqual(state.tools?.calls[0]?.bridge);
    const r = step(restored, { type: "resume" });
    expect(r.effects).toEqual([{ type: "tool_timer", callId: "c1", bridgeId: state.tools!.calls[0]!.bridge!.id, ms: DEFAULT_RUN_POLICY.toolTimeoutMs }]);
  });

  it("waits again for the checkpoint the exec request is held behind, so a client that never acknowledges still gets the exec", async () => {
    const { snapshotRunState, restoreRunState, DEFAULT_RUN_POLICY } = await import("../src/index.js");
    // The client acknowledges no blob: the exec request stays behind the tool call's checkpoint.
    const { state, effects } = run(
      [
        runRequestEvent("x"),
        {
          type: "model",
          event: { type: "item_done", item: { kind: "tool_call", id: "c1", call: { id: "c1", name: "Read", argumentsJson: JSON.stringify({ path: "a.txt" }) } } },
          nowMs: 1,
        },
        { type: "model", event: { type: "completed", usage, endTurn: false }, nowMs: 2 },
      ],
      { ackKv: false },
    );
    expect(state.phase).toBe("tools");
    expect(emitted(effects).map(describeFrame)).not.toContain("execServerMessage");
    // The owner dies before its acknowledgement waits run out; the next one restores the run.
    const restored = restoreRunState("req-1", 1, DEFAULT_RUN_POLICY, saved(snapshotRunState(state)), state.run);
    const r = step(restored, { type: "resume" });
    const waits = r.effects.filter((e) => e.type === "kv_wait");
    expect(waits.length).toBeGreaterThan(0);
    // Those waits run out: the held checkpoints are skipped and the exec request goes out.
    let next = r.state;
    const released: Effect[] = [];
    for (const w of waits) {
      if (w.type !== "kv_wait") throw new Error("unreachable");
      const t = step(next, { type: "kv_timeout", seq: w.seq });
      next = t.state;
      released.push(...t.effects);
    }
    expect(emitted(released).map(describeFrame)).toContain("execServerMessage");
  });

  it("a held end survives the takeover: an acknowledgement read after it releases the checkpoint, turn_ended and the end", async () => {
    const { snapshotRunState, restoreRunState, DEFAULT_RUN_POLICY } = await import("../src/index.js");
    const { state, effects } = run([runRequestEvent("x"), { type: "model", event: { type: "completed", usage, endTurn: true }, nowMs: 1 }], { ackKv: false });
    expect(state.phase).toBe("finishing");
    const restored = restoreRunState("req-1", 1, DEFAULT_RUN_POLICY, saved(snapshotRunState(state)), state.run);
    const r = step(restored, { type: "resume" });
    expect(r.state.phase).toBe("finishing");
    expect(r.effects.filter((e) => e.type === "kv_wait").length).toBeGreaterThan(0);
    // The client answers the previous owner's set_blob_args (same kv ids) after the takeover.
    let next = r.state;
    const out: Effect[] = [];
    for (const f of effects.flatMap((e) => (e.type === "emit" ? e.frames : []))) {
      if (f.message.case !== "kvServerMessage") continue;
      const ack = create(AgentClientMessageSchema, { message: { case: "kvClientMessage", value: { id: f.message.value.id, message: { case: "setBlobResult", value: {} } } } });
      const t = step(next, { type: "client", event: classifyClientMessage(ack) });
      next = t.state;
      out.push(...t.effects);
    }
    // The turn's first checkpoint and its final one, both held for their blobs, then the end.
    expect(emitted(out).map(describeFrame)).toEqual(["conversationCheckpointUpdate", "conversationCheckpointUpdate", "turnEnded"]);
    expect(out.at(-1)).toEqual({ type: "end", decision: { ok: true } });
    expect(next.phase).toBe("ended");
  });

  it("re-runs a cut pass whose output the client saw after the takeover notice", async () => {
    const { snapshotRunState, restoreRunState, DEFAULT_RUN_POLICY } = await import("../src/index.js");
    const { state } = run([runRequestEvent("x"), { type: "model", event: { type: "text_delta", itemId: "t", text: "cut" }, nowMs: 1 }]);
    const restored = restoreRunState("req-1", 1, DEFAULT_RUN_POLICY, saved(snapshotRunState(state)), state.run);
    const r = step(restored, { type: "resume" });
    const texts = emitted(r.effects).flatMap((f) => (f.message.case === "interactionUpdate" && f.message.value.message.case === "textDelta" ? [f.message.value.message.value] : []));
    expect(texts).toMatchObject([{ text: NOTICE.takenOver, isServerNotice: true }]);
    expect(r.effects.at(-1)).toEqual({ type: "start_model_call", modelCallId: "g1m1", attempt: 2 });
  });
});

describe("the cut pass read back from the output after a takeover", () => {
  const enc = (f: AgentServerMessage) => toBinary(AgentServerMessageSchema, f);

  it("adds what the pass streamed after its snapshot (text, thinking, closed thinking time) and no server notice", async () => {
    const { snapshotRunState, restoreRunState, withStreamedTail, frames, DEFAULT_RUN_POLICY } = await import("../src/index.js");
    const { state } = run([runRequestEvent("x"), { type: "model", event: { type: "text_delta", itemId: "t", text: "seen " }, nowMs: 1 }]);
    const restored = restoreRunState("req-1", 1, DEFAULT_RUN_POLICY, saved(snapshotRunState(state)), state.run);
    const tail = [frames.thinkingDelta("hm"), frames.thinkingCompleted(40), frames.textDelta("and more"), frames.textDelta("(notice)", true), frames.heartbeat()].map(enc);
    const caught = withStreamedTail(restored, tail);
    expect(caught.current).toMatchObject({ text: "seen and more", thinkingText: "hm", thinkingMs: 40, outputStarted: true });
    // The re-run keeps it as the interrupted attempt's output: its history entry and its steps.
    const r = step(caught, { type: "resume" });
    const history = r.effects.find((e) => e.type === "record_history");
    expect(history).toMatchObject({ entries: [{ kind: "assistant", interrupted: true, body: { text: "seen and more" } }] });
    expect(r.state.steps.slice(-2)).toMatchObject([
      { case: "thinkingMessage", value: { text: "hm", durationMs: 40 } },
      { case: "assistantMessage", value: { text: "seen and more" } },
    ]);
    // Nothing after the snapshot, or not in a pass: unchanged.
    expect(withStreamedTail(restored, [])).toBe(restored);
    const ended = run([runRequestEvent("x"), { type: "model", event: { type: "completed", usage, endTurn: true }, nowMs: 1 }]).state;
    expect(withStreamedTail(ended, tail)).toBe(ended);
  });

  it("leaves a summary pass alone: it streams nothing to the chat", async () => {
    const { withStreamedTail, frames } = await import("../src/index.js");
    const { state } = run([runRequestEvent("x"), { type: "model", event: { type: "text_delta", itemId: "t", text: "a" }, nowMs: 1 }]);
    const summarizing: RunState = { ...state, run: { ...state.run!, kind: "summarize" } };
    expect(withStreamedTail(summarizing, [enc(frames.textDelta("b"))])).toBe(summarizing);
  });

  it("a checkpoint's acknowledgement timer that fires after its acknowledgements changes nothing (no snapshot to save)", () => {
    const { state, effects } = run([runRequestEvent("x")]);
    const waits = effects.filter((e) => e.type === "kv_wait");
    expect(waits.length).toBeGreaterThan(0);
    for (const w of waits) {
      if (w.type !== "kv_wait") throw new Error("unreachable");
      const r = step(state, { type: "kv_timeout", seq: w.seq });
      expect(r.state).toBe(state);
      expect(r.effects).toEqual([]);
    }
  });
});

describe("phase transitions", () => {
  const readCall: RunEvent = {
    type: "model",
    event: { type: "item_done", item: { kind: "tool_call", id: "c1", call: { id: "c1", name: "Read", argumentsJson: JSON.stringify({ path: "a.txt" }) } } },
    nowMs: 1,
  };
  const cancel = create(AgentClientMessageSchema, { message: { case: "conversationAction", value: { action: { case: "cancelAction", value: {} } } } });

  it("step returns each phase change with its cause, and none for a step that keeps the phase", () => {
    const { state, transitions } = run([
      runRequestEvent("x"),
      readCall,
      { type: "model", event: { type: "completed", usage, endTurn: false }, nowMs: 2 },
      { type: "client", event: classifyClientMessage(create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } })) },
      { type: "client", event: classifyClientMessage(cancel) },
    ]);
    expect(transitions).toEqual([
      { from: "awaiting_run", to: "model_call", cause: "run_request" },
      { from: "model_call", to: "tools", cause: "model" },
      // The cancel's final checkpoint waits for its blobs (acknowledged at once here).
      { from: "tools", to: "finishing", cause: "conversation_action" },
      { from: "finishing", to: "ended", cause: "kv_client_message" },
    ]);
    expect(state.phase).toBe("ended");
  });

  it("a held end leaves finishing when its acknowledgement wait runs out", () => {
    const { state, effects, transitions } = run([runRequestEvent("x"), { type: "model", event: { type: "completed", usage, endTurn: true }, nowMs: 1 }], { ackKv: false });
    expect(transitions.map((t) => [t.from, t.to, t.cause])).toEqual([["awaiting_run", "model_call", "run_request"], ["model_call", "finishing", "model"]]);
    const seq = Math.max(...effects.flatMap((e) => (e.type === "kv_wait" ? [e.seq] : [])));
    expect(step(state, { type: "kv_timeout", seq }).transition).toEqual({ from: "finishing", to: "ended", cause: "kv_timeout" });
  });

  it("the predicates answer for the phase they name", () => {
    const calling = run([runRequestEvent("x")]).state;
    expect([isCallingModel(calling), isRunningTools(calling), isInTurn(calling), isFinishing(calling)]).toEqual([true, false, true, false]);
    const tools = run([runRequestEvent("x"), readCall, { type: "model", event: { type: "completed", usage, endTurn: false }, nowMs: 2 }]).state;
    expect([isCallingModel(tools), isRunningTools(tools), isInTurn(tools)]).toEqual([false, true, true]);
    expect(isInTurn(initialRunState("r", 1))).toBe(false);
  });
});

describe("a run_request after a prewarm", () => {
  /** A prewarm whose state lists one earlier turn (a blob id). */
  const prewarmEvent: RunEvent = {
    type: "client",
    event: classifyClientMessage(
      create(AgentClientMessageSchema, {
        message: { case: "prewarmRequest", value: { conversationId: "conv-1", requestedModel: { modelId: "gpt-test" }, conversationState: { turns: [new Uint8Array(32).fill(7)] } } },
      }),
    ),
  };
  function runRequest(state: "none" | "zero turns"): RunEvent {
    const msg = create(AgentClientMessageSchema, {
      message: {
        case: "runRequest",
        value: {
          conversationId: "conv-1",
          ...(state === "zero turns" ? { conversationState: {} } : {}),
          action: { action: { case: "userMessageAction", value: { userMessage: { text: "again", messageId: "m2", mode: AgentMode.AGENT } } } },
        },
      },
    });
    const decoded = decodeClientMessage(toBinary(AgentClientMessageSchema, msg));
    if (!decoded.ok) throw new Error(decoded.reason);
    return { type: "client", event: classifyClientMessage(decoded.message) };
  }

  it("without a conversation_state takes the prewarm's (its turns are imported or looked up)", () => {
    const { state, effects } = run([prewarmEvent, runRequest("none")]);
    expect(state.run?.conversationState?.turns).toHaveLength(1);
    expect(effects.some((e) => e.type === "check_history")).toBe(true);
  });

  it("with a state of zero turns keeps it: the user restored the chat to its beginning after the prewarm", () => {
    const { state, effects } = run([prewarmEvent, runRequest("zero turns")]);
    expect(state.run?.conversationState?.turns).toHaveLength(0);
    expect(state.run?.modelId).toBe("gpt-test"); // what the run_request left out still comes from the prewarm
    expect(effects.some((e) => e.type === "check_history")).toBe(false);
    expect(isCallingModel(state)).toBe(true);
  });
});
