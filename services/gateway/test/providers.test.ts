// Issue 4 through the whole gateway: every provider API, usage normalization, retries with a
// server notice, the error table, and no credential in logs, errors or frames.
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@byok/telemetry";
import { createCursorClient, runRequestMessage, type CursorClient } from "@byok/testing";
import { create } from "@bufbuild/protobuf";
import { AgentClientMessageSchema, ErrorDetails_Error, type AgentServerMessage } from "@byok/wire";
import { BEDROCK_SECRET, GATEWAY_PROVIDER_KEY, startHarness, type Harness } from "./harness.js";

const logLines: string[] = [];
const logSink = new Writable({
  write(chunk: Buffer, _enc, cb) {
    logLines.push(chunk.toString("utf8"));
    cb();
  },
});

function updates(messages: AgentServerMessage[], kind: string): AgentServerMessage[] {
  return messages.filter((m) => m.message.case === "interactionUpdate" && m.message.value.message.case === kind);
}

describe("providers through the gateway", () => {
  let h: Harness;
  let client: CursorClient;
  let n = 0;
  const turn = (modelId: string, extra: Partial<Parameters<typeof runRequestMessage>[0]> = {}) =>
    client.runTurn({ requestId: `prov-${++n}`, message: runRequestMessage({ text: "hello", conversationId: `c-prov-${n}`, modelId, ...extra }) });

  beforeAll(async () => {
    h = await startHarness({ GATEWAY_LOG_LEVEL: "debug" }, createLogger({ service: "test", level: "debug", destination: logSink }));
    client = createCursorClient({ baseUrl: h.gw.url });
  });
  afterAll(async () => h.close());

  it.each(["sim-openai-chat", "sim-openai-responses", "sim-anthropic", "sim-azure-openai", "sim-bedrock-anthropic"])(
    "%s: thinking, text and normalized usage",
    async (modelId) => {
      h.sim.enqueue({
        reasoning: ["weighing ", "options"],
        text: ["The answer ", "is 42."],
        usage: { inputTokens: 30, outputTokens: 11, cacheReadTokens: 6, reasoningTokens: 4 },
      });
      const r = await turn(modelId);
      expect(r.end).toEqual({ ok: true });
      expect(r.textDeltas).toBe("The answer is 42.");
      expect(updates(r.messages, "thinkingDelta").length).toBeGreaterThan(0);
      expect(updates(r.messages, "thinkingCompleted")).toHaveLength(1);
      expect(r.turnEnded).toMatchObject({ inputTokens: 30n, outputTokens: 11n, cacheReadTokens: 6n });
      // Reasoning is reported inside output where the API reports it at all.
      expect([0n, 4n]).toContain(r.turnEnded?.reasoningTokens);
    },
  );

  it("anthropic: counts cache writes separately from input", async () => {
    h.sim.enqueue({ text: "cached", usage: { inputTokens: 10, outputTokens: 2, cacheReadTokens: 100, cacheWriteTokens: 50 } });
    const r = await turn("sim-anthropic");
    expect(r.turnEnded).toMatchObject({ inputTokens: 10n, outputTokens: 2n, cacheReadTokens: 100n, cacheWriteTokens: 50n });
  });

  it("retries a stream cut after output with a server notice first, and sums usage over both attempts", async () => {
    h.sim.enqueue(
      { text: ["partial ", "answer ", "that ", "breaks"], disconnectAfterChunks: 3 },
      { text: "complete answer", usage: { inputTokens: 8, outputTokens: 3 } },
    );
    const r = await turn("sim-openai-chat");
    expect(r.end).toEqual({ ok: true });
    const texts = updates(r.messages, "textDelta").map((m) =>
      m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta" ? m.message.value.message.value : undefined,
    );
    const noticeAt = texts.findIndex((t) => t?.isServerNotice);
    expect(noticeAt).toBeGreaterThan(0);
    expect(texts[noticeAt]!.text).toMatch(/reconnecting 1\/5/);
    expect(texts.slice(noticeAt + 1).map((t) => t?.text).join("")).toBe("complete answer");
    // The cut attempt's usage is kept (an estimate) on top of the second attempt's exact usage.
    expect(Number(r.turnEnded?.inputTokens)).toBeGreaterThan(8);
  });

  it("honours a 429 retry-after before any output, without a notice", async () => {
    h.sim.enqueue({ httpError: { status: 429, headers: { "retry-after": "0" }, body: { error: { message: "slow down", type: "rate_limit" } } } }, { text: "after the wait", usage: { inputTokens: 1, outputTokens: 1 } });
    const r = await turn("sim-openai-chat");
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toBe("after the wait");
  });

  it("ends unavailable + ERROR_RATE_LIMITED when the provider keeps rate limiting", async () => {
    const limited = { httpError: { status: 429, headers: { "retry-after": "0" }, body: { error: { message: "slow down", type: "rate_limit" } } } };
    h.sim.enqueue(...Array.from({ length: 5 }, () => limited));
    const r = await turn("sim-openai-chat");
    expect(r.end).toMatchObject({ ok: false, code: "unavailable" });
    if (r.end?.ok === false) expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.RATE_LIMITED);
  });

  it("does not retry a context overflow: invalid_argument + ERROR_CONVERSATION_TOO_LONG", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue({ httpError: { status: 400, body: { error: { message: "This model's maximum context length is 8192 tokens", type: "invalid_request_error", code: "context_length_exceeded" } } } });
    const r = await turn("sim-openai-chat");
    expect(r.end).toMatchObject({ ok: false, code: "invalid_argument" });
    if (r.end?.ok === false) expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.CONVERSATION_TOO_LONG);
    expect(h.sim.requests.length - before).toBe(1);
  });

  it("a rejected client key ends failed_precondition + ERROR_BAD_USER_API_KEY; a rejected gateway key says an administrator must fix it", async () => {
    const clientKey = "sk-client-rejected-key-1234567890";
    // The simulator echoes the key in its 401 body, as some providers do.
    h.sim.enqueue({ httpError: { status: 401, body: { error: { message: `Incorrect API key provided: ${clientKey}`, type: "invalid_request_error", code: "invalid_api_key" } } } });
    const r = await turn("sim-client-key", { credentials: { apiKey: clientKey } });
    expect(r.end).toMatchObject({ ok: false, code: "failed_precondition" });
    if (r.end?.ok !== false) throw new Error("expected an error");
    expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.BAD_USER_API_KEY);
    expect(JSON.stringify(r.end)).not.toContain(clientKey);

    h.sim.enqueue({ httpError: { status: 401, body: { error: { message: `Incorrect API key provided: ${GATEWAY_PROVIDER_KEY}`, type: "invalid_request_error" } } } });
    const g = await turn("sim-openai-chat");
    if (g.end?.ok !== false) throw new Error("expected an error");
    expect(g.end.code).toBe("failed_precondition");
    expect(g.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.PROVIDER_ERROR);
    expect(g.end.message).toMatch(/administrator/);
    expect(JSON.stringify(g.end)).not.toContain(GATEWAY_PROVIDER_KEY);
  });

  it("translates streamed tool-call arguments into partial_tool_call frames, then tool_call_started", async () => {
    h.sim.enqueue(
      { text: "Let me look.", toolCalls: [{ id: "functions.Ls:0", name: "Ls", arguments: ['{"path":', '"src"}'] }], usage: { inputTokens: 3, outputTokens: 5 } },
      { text: "Nothing there.", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    const r = await client.runTurn({
      requestId: `prov-${++n}`,
      message: runRequestMessage({ text: "hello", conversationId: `c-prov-${n}`, modelId: "sim-openai-chat" }),
      // The client cannot list: it answers with a throw, which the model reads as a tool error.
      onMessage: async (m, t) => {
        if (m.message.case === "execServerMessage") {
          await t.append(create(AgentClientMessageSchema, { message: { case: "execClientControlMessage", value: { message: { case: "throw", value: { id: m.message.value.id, error: "no ls here" } } } } }));
        }
      },
    });
    expect(r.end).toEqual({ ok: true });
    expect(updates(r.messages, "toolCallStarted")).toHaveLength(1);
    const partial = updates(r.messages, "partialToolCall").map((m) =>
      m.message.case === "interactionUpdate" && m.message.value.message.case === "partialToolCall" ? m.message.value.message.value : undefined,
    );
    expect(partial.map((p) => p?.argsTextDelta).join("")).toBe('{"path":"src"}');
    expect(new Set(partial.map((p) => p?.callId)).size).toBe(1);
    expect(partial[0]!.callId.length).toBeLessThanOrEqual(64);
    expect(partial[0]!.modelCallId).toMatch(/^g1m1$/);
    expect(JSON.stringify(h.sim.requests.at(-1)!.body)).toContain("no ls here");
  });

  it("refuses a client base_url on a private address outside embedded mode", async () => {
    const strict = await startHarness({ GATEWAY_ALLOW_PRIVATE_BASE_URLS: "false" });
    try {
      const c = createCursorClient({ baseUrl: strict.gw.url });
      const r = await c.runTurn({
        requestId: "private-base-url",
        message: runRequestMessage({ text: "hi", conversationId: "c-private", modelId: "some-model", credentials: { apiKey: "sk-whatever-123456", baseUrl: "http://169.254.169.254/v1" } }),
      });
      expect(r.end).toMatchObject({ ok: false, code: "permission_denied" });
      if (r.end?.ok === false) expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.CUSTOM_MESSAGE);
      expect(strict.sim.requests).toHaveLength(0);
    } finally {
      await strict.close();
    }
  });

  it("never writes a credential to the logs", async () => {
    const clientKey = "sk-client-byok-secret-abcdef0123";
    h.sim.enqueue({ text: "ok", usage: { inputTokens: 1, outputTokens: 1 } });
    await turn("sim-client-key", { credentials: { apiKey: clientKey } });
    const all = logLines.join("");
    expect(all.length).toBeGreaterThan(0);
    for (const secret of [clientKey, GATEWAY_PROVIDER_KEY, BEDROCK_SECRET, "sk-client-rejected-key-1234567890"]) {
      expect(all).not.toContain(secret);
    }
  });
});
