// Issue 9 item 1: a run that ends while a tool call is pending (cancel, supersede, reader gone,
// tool timeout, aborted exec) never leaves the call without its result in stored history, so
// the next turn of the conversation is one every vendor accepts (the simulator refuses a call
// without its result with each vendor's own 400).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  cancelMessage, conversationActionMessage, createCursorClient, execThrowMessage, kvSetBlobResultMessage, runRequestMessage,
  type CursorClient, type RunTurnResult,
} from "@byok/testing";
import type { AgentServerMessage, ConversationStateStructure } from "@byok/wire";
import { startHarness, type Harness } from "./harness.js";

const KINDS = ["sim-openai-chat", "sim-openai-responses", "sim-anthropic", "sim-azure-openai", "sim-bedrock-anthropic"] as const;
const READ = { name: "Read", arguments: JSON.stringify({ path: "src/a.ts" }) };

function startedCallId(m: AgentServerMessage): string | undefined {
  return m.message.case === "interactionUpdate" && m.message.value.message.case === "toolCallStarted" ? m.message.value.message.value.callId : undefined;
}

describe("a tool call pending when the run ends is answered in history", () => {
  let h: Harness;
  let client: CursorClient;
  let n = 0;

  beforeAll(async () => {
    h = await startHarness({ GATEWAY_RECONNECT_GRACE_MS: "300" });
    client = createCursorClient({ baseUrl: h.gw.url });
  });
  afterAll(async () => h.close());

  /** Turn 2 of the conversation, continuing from the client's last checkpoint: must succeed. */
  async function nextTurn(conversationId: string, modelId: string, state: ConversationStateStructure | undefined): Promise<{ r: RunTurnResult; body: string }> {
    const before = h.sim.requests.length;
    h.sim.enqueue({ text: "Hello again.", usage: { inputTokens: 3, outputTokens: 2 } });
    const r = await client.runTurn({
      requestId: `it-next-${++n}`,
      message: runRequestMessage({ text: "say hi", conversationId, modelId, ...(state ? { conversationState: state } : {}) }),
    });
    const sent = h.sim.requests.slice(before);
    expect(sent.map((q) => q.rejectedWith)).toEqual([undefined]);
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toBe("Hello again.");
    return { r, body: sent[0]!.rawBody };
  }

  it.each(KINDS)("%s: cancel while a Read is pending, then the next turn succeeds", async (modelId) => {
    const conversationId = `c-int-cancel-${modelId}`;
    h.sim.enqueue({ text: "Reading.", toolCalls: [READ], usage: { inputTokens: 2, outputTokens: 2 } });
    let canceled = false;
    const t1 = await client.runTurn({
      requestId: `it-cancel-${modelId}`,
      message: runRequestMessage({ text: "read a.ts", conversationId, modelId }),
      onMessage: async (m, t) => {
        if (m.message.case === "execServerMessage" && !canceled) {
          canceled = true;
          await t.append(cancelMessage("user pressed stop"));
        }
      },
    });
    expect(t1.end).toMatchObject({ ok: false, code: "canceled" });
    const { body } = await nextTurn(conversationId, modelId, t1.lastCheckpoint);
    expect(body).toContain("The user canceled the run while this tool call was pending");
  });

  it("uses the client's interrupted_pending_tool_call_resolutions when the cancel carries them", async () => {
    const conversationId = "c-int-resolved";
    h.sim.enqueue({ toolCalls: [{ name: "Shell", arguments: JSON.stringify({ command: "make build" }) }], usage: { inputTokens: 2, outputTokens: 2 } });
    let callId: string | undefined;
    const t1 = await client.runTurn({
      requestId: "it-resolved",
      message: runRequestMessage({ text: "build it", conversationId, modelId: "sim-anthropic" }),
      onMessage: async (m, t) => {
        callId ??= startedCallId(m);
        if (m.message.case !== "execServerMessage" || !callId) return;
        await t.append(
          conversationActionMessage({
            action: {
              case: "cancelAction",
              value: {
                reason: "stop",
                interruptedPendingToolCallResolutions: {
                  resolutions: [{ toolCallId: callId, resolution: { case: "shellResult", value: { result: { case: "success", value: { command: "make build", exitCode: 0, stdout: "BUILD-FINISHED-OK" } } } } }],
                },
              },
            },
          }),
        );
      },
    });
    expect(t1.end).toMatchObject({ ok: false, code: "canceled" });
    const { body } = await nextTurn(conversationId, "sim-anthropic", t1.lastCheckpoint);
    expect(body).toContain("BUILD-FINISHED-OK");
    expect(body).not.toContain("did not return a result");
  });

  it("supersede: a new message while a Read is pending; the newer run and the one after it succeed", async () => {
    const conversationId = "c-int-supersede";
    h.sim.enqueue({ toolCalls: [READ], usage: { inputTokens: 2, outputTokens: 2 } });
    let execSeen!: () => void;
    const seen = new Promise<void>((r) => (execSeen = r));
    const older = client.runTurn({
      requestId: "it-sup-old",
      message: runRequestMessage({ text: "read a.ts", conversationId, modelId: "sim-anthropic" }),
      onMessage: (m) => {
        if (m.message.case === "execServerMessage") execSeen();
      },
    });
    await seen;
    const before = h.sim.requests.length;
    h.sim.enqueue({ text: "Newer answer.", usage: { inputTokens: 2, outputTokens: 2 } });
    const newer = await client.runTurn({ requestId: "it-sup-new", message: runRequestMessage({ text: "forget it", conversationId, modelId: "sim-anthropic" }) });
    expect(newer.end).toEqual({ ok: true });
    expect(h.sim.requests.slice(before).map((q) => q.rejectedWith)).toEqual([undefined]);
    expect((await older).end).toMatchObject({ ok: false, code: "canceled" });
    const { body } = await nextTurn(conversationId, "sim-anthropic", newer.lastCheckpoint);
    expect(body).toContain("forget it");
  });

  it("reader gone: the client disconnects while a Read is pending; the next turn succeeds", async () => {
    const conversationId = "c-int-gone";
    h.sim.enqueue({ toolCalls: [READ], usage: { inputTokens: 2, outputTokens: 2 } });
    const controller = new AbortController();
    const stream = await client.runSse("it-gone", { signal: controller.signal });
    await client.append("it-gone", 1, runRequestMessage({ text: "read a.ts", conversationId, modelId: "sim-bedrock-anthropic" }));
    let seqno = 2;
    for await (const item of stream.frames) {
      if (item.kind !== "message") continue;
      const m = item.message.message;
      if (m.case === "kvServerMessage") await client.append("it-gone", seqno++, kvSetBlobResultMessage(m.value.id));
      if (m.case === "execServerMessage") break;
    }
    controller.abort();
    // Reconnecting before the grace ran out would keep the run alive: wait for its end first.
    const ref = { tenantId: h.config.defaultTenant, requestId: "it-gone" };
    await expect.poll(async () => (await h.gw.bus.latestGeneration(ref))?.ended, { timeout: 10_000, interval: 50 }).toBe(true);
    const after = await client.collect("it-gone");
    expect(after.end).toMatchObject({ ok: false, code: "canceled" });
    const { body } = await nextTurn(conversationId, "sim-bedrock-anthropic", after.lastCheckpoint);
    expect(body).toContain("disconnected while this tool call was pending");
  });
});

describe("a tool call that times out or that the client aborts is answered in history", () => {
  let h: Harness;
  let client: CursorClient;
  beforeAll(async () => {
    h = await startHarness({ GATEWAY_TOOL_TIMEOUT_MS: "500" });
    client = createCursorClient({ baseUrl: h.gw.url });
  });
  afterAll(async () => h.close());

  it("tool timeout and an exec the client aborts: the model gets an error result and later turns succeed", async () => {
    const conversationId = "c-int-timeout";
    h.sim.enqueue(
      { toolCalls: [READ, { name: "Grep", arguments: JSON.stringify({ pattern: "x" }) }], usage: { inputTokens: 2, outputTokens: 2 } },
      { text: "One timed out, one failed.", usage: { inputTokens: 2, outputTokens: 2 } },
    );
    let grepThrown = false;
    const t1 = await client.runTurn({
      requestId: "it-timeout",
      message: runRequestMessage({ text: "read and grep", conversationId, modelId: "sim-openai-responses" }),
      onMessage: async (m, t) => {
        // Read is never answered (times out); Grep fails on the client.
        if (m.message.case === "execServerMessage" && m.message.value.message.case === "grepArgs" && !grepThrown) {
          grepThrown = true;
          await t.append(execThrowMessage(m.message.value.id, "ripgrep crashed"));
        }
      },
    });
    expect(t1.end).toEqual({ ok: true });
    expect(t1.textDeltas).toBe("One timed out, one failed.");
    const second = h.sim.requests.findLast((q) => q.rawBody.includes("ripgrep crashed"));
    expect(second?.rawBody).toContain("did not answer within");
    const before = h.sim.requests.length;
    h.sim.enqueue({ text: "Hello again.", usage: { inputTokens: 3, outputTokens: 2 } });
    const t2 = await client.runTurn({
      requestId: "it-timeout-next",
      message: runRequestMessage({ text: "say hi", conversationId, modelId: "sim-openai-responses", ...(t1.lastCheckpoint ? { conversationState: t1.lastCheckpoint } : {}) }),
    });
    expect(t2.end).toEqual({ ok: true });
    expect(h.sim.requests.slice(before).map((q) => q.rejectedWith)).toEqual([undefined]);
  });
});

describe.each([
  ["redis bus, retention on", false],
  ["redis bus, privacy mode (x-ghost-mode)", true],
] as const)("cancel while a tool call is pending (%s)", (_name, ghostMode) => {
  let h: Harness;
  let client: CursorClient;
  beforeAll(async () => {
    h = await startHarness({}, undefined, "redis");
    client = createCursorClient({ baseUrl: h.gw.url, ghostMode });
  });
  afterAll(async () => h.close());

  it("the next turn of the conversation succeeds", async () => {
    const conversationId = `c-int-redis-${ghostMode}`;
    // The client's blob store, kept across turns like Cursor's (privacy mode imports the turns from it).
    const blobs = new Map<string, Uint8Array>();
    h.sim.enqueue({ toolCalls: [READ], usage: { inputTokens: 2, outputTokens: 2 } });
    let canceled = false;
    const t1 = await client.runTurn({
      blobs,
      requestId: `it-redis-cancel-${ghostMode}`,
      message: runRequestMessage({ text: "read a.ts", conversationId, modelId: "sim-anthropic" }),
      onMessage: async (m, t) => {
        if (m.message.case === "execServerMessage" && !canceled) {
          canceled = true;
          await t.append(cancelMessage("stop"));
        }
      },
    });
    expect(t1.end).toMatchObject({ ok: false, code: "canceled" });
    const before = h.sim.requests.length;
    h.sim.enqueue({ text: "Hello again.", usage: { inputTokens: 3, outputTokens: 2 } });
    const t2 = await client.runTurn({
      blobs,
      requestId: `it-redis-next-${ghostMode}`,
      message: runRequestMessage({ text: "say hi", conversationId, modelId: "sim-anthropic", ...(t1.lastCheckpoint ? { conversationState: t1.lastCheckpoint } : {}) }),
    });
    expect(t2.end).toEqual({ ok: true });
    expect(h.sim.requests.slice(before).map((q) => q.rejectedWith)).toEqual([undefined]);
    // With retention the stored turn is replayed with the call answered; privacy mode stores
    // nothing, so the turn comes back imported from the client's blobs (its text, no tool call).
    const body = h.sim.requests[before]!.rawBody;
    expect(body).toContain("read a.ts");
    if (!ghostMode) expect(body).toContain("The user canceled the run while this tool call was pending");
  });
});
