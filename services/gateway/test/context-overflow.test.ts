// Issue 9 item 7: a provider's context-length refusal is not fatal. The gateway compacts the
// conversation (a summary pass over the older history, the recent tail verbatim) and retries
// the pass once after a server notice; when even that is too long the run ends
// invalid_argument + ERROR_CONVERSATION_TOO_LONG saying compaction was tried. The simulator
// answers an oversized prompt with each vendor's own context-length error.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorClient, runRequestMessage, type CursorClient, type RunTurnResult } from "@byok/testing";
import { ErrorDetails_Error, type AgentServerMessage } from "@byok/wire";
import { startHarness, type Harness } from "./harness.js";

/** The upstream models of the harness's per-provider routes, all given a small window in the simulator. */
const SMALL = 8_000;
const UPSTREAM = ["sim-chat", "gpt-5", "claude-sonnet-4-5", "prod-4o", "us.anthropic.claude-sonnet-4-5-v1:0"];
const KINDS = ["sim-openai-chat", "sim-openai-responses", "sim-anthropic", "sim-azure-openai", "sim-bedrock-anthropic"] as const;

/** About `chars` characters of varied prose (so every tokenizer counts it as ordinary text). */
function prose(tag: string, chars: number): string {
  const words = ["gateway", "provider", "context", "window", "summary", "turn", "model", "tokens", "history", "compaction", "request", "stream"];
  let out = `${tag}:`;
  for (let i = 0; out.length < chars; i++) out += ` ${words[(i * 7) % words.length]}${i % 13}`;
  return out;
}

function notices(messages: AgentServerMessage[]): string[] {
  return messages.flatMap((m) =>
    m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta" && m.message.value.message.value.isServerNotice
      ? [m.message.value.message.value.text]
      : [],
  );
}

function has(messages: AgentServerMessage[], kind: string): boolean {
  return messages.some((m) => m.message.case === "interactionUpdate" && m.message.value.message.case === kind);
}

describe("context-length refusal: compact and retry once", () => {
  let h: Harness;
  let client: CursorClient;
  let n = 0;

  beforeAll(async () => {
    h = await startHarness({}, undefined, "memory", { contextWindows: Object.fromEntries(UPSTREAM.map((m) => [m, SMALL])) });
    client = createCursorClient({ baseUrl: h.gw.url });
  });
  afterAll(async () => h.close());

  /** Turn 1 fits the window; turn 2 (its history plus a short question) does not. */
  async function firstTurn(conversationId: string, modelId: string): Promise<void> {
    h.sim.enqueue({ text: prose("ANSWER-ONE", 8_000), usage: { inputTokens: 10, outputTokens: 10 } });
    const r = await client.runTurn({ requestId: `co-${++n}`, message: runRequestMessage({ text: prose("QUESTION-ONE", 14_000), conversationId, modelId }) });
    expect(r.end).toEqual({ ok: true });
  }

  function secondTurn(conversationId: string, modelId: string): Promise<RunTurnResult> {
    return client.runTurn({ requestId: `co-${++n}`, message: runRequestMessage({ text: "QUESTION-TWO: and now?", conversationId, modelId }) });
  }

  it.each(KINDS)("%s: the refused pass is compacted and retried with a notice", async (modelId) => {
    const conversationId = `c-overflow-${modelId}`;
    await firstTurn(conversationId, modelId);
    const before = h.sim.requests.length;
    h.sim.enqueue(
      { text: "SUMMARY: the user asked question one at length.", usage: { inputTokens: 5, outputTokens: 5 } },
      { text: "Answer two.", usage: { inputTokens: 5, outputTokens: 2 } },
    );
    const r = await secondTurn(conversationId, modelId);
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toContain("Answer two.");
    expect(notices(r.messages).join("")).toMatch(/longer than the model's context window; summarizing earlier messages and retrying/);
    expect(has(r.messages, "summaryStarted") && has(r.messages, "summaryCompleted")).toBe(true);
    const sent = h.sim.requests.slice(before);
    // refused (the vendor's own context error) → summary pass → the retried pass.
    expect(sent).toHaveLength(3);
    expect(sent[0]!.rejectedWith).toMatch(/context|too long/i);
    expect(sent[1]!.rejectedWith).toBeUndefined();
    expect(sent[1]!.rawBody).toContain("QUESTION-ONE");
    const retried = sent[2]!;
    expect(retried.rejectedWith).toBeUndefined();
    expect(retried.rawBody).toContain("SUMMARY: the user asked question one");
    // The recent tail stays verbatim; the summarized question is gone from the prompt.
    expect(retried.rawBody).toContain("QUESTION-TWO");
    expect(retried.rawBody).toContain("ANSWER-ONE");
    expect(retried.rawBody).not.toContain("QUESTION-ONE");
  });

  it("still too long after compacting: invalid_argument + ERROR_CONVERSATION_TOO_LONG saying compaction was tried", async () => {
    const conversationId = "c-overflow-still";
    await firstTurn(conversationId, "sim-anthropic");
    const before = h.sim.requests.length;
    // A summary so long that the retried pass is refused again: no second compaction.
    h.sim.enqueue({ text: prose("HUGE-SUMMARY", 36_000), usage: { inputTokens: 5, outputTokens: 5 } });
    const r = await secondTurn(conversationId, "sim-anthropic");
    expect(r.end).toMatchObject({ ok: false, code: "invalid_argument" });
    if (r.end?.ok !== false) throw new Error("expected an error end");
    expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.CONVERSATION_TOO_LONG);
    expect(r.end.message).toMatch(/still, after compacting it/);
    const sent = h.sim.requests.slice(before);
    expect(sent.map((q) => q.rejectedWith !== undefined)).toEqual([true, false, true]);
  });

  it("nothing to compact (one oversized message): the refusal ends the run, saying compaction was not tried", async () => {
    const before = h.sim.requests.length;
    const r = await client.runTurn({ requestId: `co-${++n}`, message: runRequestMessage({ text: prose("ONE-HUGE", 40_000), conversationId: "c-overflow-one", modelId: "sim-openai-chat" }) });
    expect(r.end).toMatchObject({ ok: false, code: "invalid_argument" });
    if (r.end?.ok !== false) throw new Error("expected an error end");
    expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.CONVERSATION_TOO_LONG);
    expect(r.end.message).toMatch(/compaction was not tried/);
    expect(h.sim.requests.slice(before)).toHaveLength(1);
  });
});
