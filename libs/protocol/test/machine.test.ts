import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  AgentClientMessageSchema, AgentMode, ConversationTurnStructureSchema, ErrorDetails_Error, type AgentServerMessage,
} from "@byok/wire";
import type { Usage } from "@byok/providers";
import {
  classifyClientMessage, decodeClientMessage, initialRunState, step, type Effect, type RunEvent, type RunState,
} from "../src/index.js";

const usage: Usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 2, cacheWriteTokens: 0, reasoningTokens: 1, estimated: false };

function runRequestEvent(text: string): RunEvent {
  const msg = create(AgentClientMessageSchema, {
    message: {
      case: "runRequest",
      value: {
        conversationId: "conv-1",
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

function run(events: RunEvent[]): { state: RunState; effects: Effect[] } {
  let state = initialRunState("req-1", 1);
  const effects: Effect[] = [];
  for (const e of events) {
    const r = step(state, e);
    state = r.state;
    effects.push(...r.effects);
  }
  return { state, effects };
}

function emitted(effects: Effect[]): AgentServerMessage[] {
  return effects.flatMap((e) => (e.type === "emit" ? e.frames : []));
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
    const turn = fromBinary(ConversationTurnStructureSchema, final.message.value.turns[0]!);
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
      { type: "model_retry", notice: "reconnecting 1/5 …", usage },
      { type: "model", event: { type: "text_delta", itemId: "t", text: "full" }, nowMs: 2 },
      { type: "model", event: { type: "completed", usage, endTurn: true }, nowMs: 3 },
    ]);
    const frames = emitted(effects);
    expect(frames.map(describeFrame)).toEqual([
      "conversationCheckpointUpdate", "textDelta", "textDelta", "textDelta", "conversationCheckpointUpdate", "turnEnded",
    ]);
    const notice = frames[2]!;
    expect(notice.message.case === "interactionUpdate" && notice.message.value.message.case === "textDelta" && notice.message.value.message.value.isServerNotice).toBe(true);
    const history = effects.flatMap((e) => (e.type === "record_history" ? e.entries : []));
    expect(history.map((h) => [h.kind, h.interrupted, h.body.text])).toEqual([
      ["user", false, "x"], ["assistant", true, "partial"], ["assistant", false, "full"],
    ]);
    const te = frames[5]!;
    expect(te.message.case === "interactionUpdate" && te.message.value.message.case === "turnEnded" && te.message.value.message.value.inputTokens).toBe(20n);
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
