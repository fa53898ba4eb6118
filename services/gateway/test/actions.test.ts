// Conversation actions (docs/actions.md) with an observable behaviour each.
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conversationActionMessage, createCursorClient, runRequestMessage, type CursorClient } from "@byok/testing";
import {
  AgentClientMessageSchema, AgentMode, AssistantMessageSchema, ConversationActionSchema, ConversationStateStructureSchema,
  ConversationSummarySchema, PreFetchedBlobSchema, RequestContextSchema, type AgentServerMessage,
} from "@byok/wire";
import { buildTurnBlobs } from "@byok/protocol";
import { fromBinary } from "@bufbuild/protobuf";
import { startHarness, TEST_MODEL, type Harness } from "./harness.js";

type Action = Parameters<typeof create<typeof ConversationActionSchema>>[1];

/** A run_request whose action is `action` (instead of a user message). */
function runWithAction(conversationId: string, action: Action) {
  const msg = runRequestMessage({ text: "", conversationId, modelId: TEST_MODEL });
  if (msg.message.case !== "runRequest") throw new Error("unreachable");
  msg.message.value.action = create(ConversationActionSchema, action);
  return msg;
}

function updateKinds(messages: AgentServerMessage[]): string[] {
  return messages.flatMap((m) => (m.message.case === "interactionUpdate" ? [String(m.message.value.message.case)] : []));
}

describe.each(["memory", "redis"] as const)("conversation actions (%s bus)", (bus) => {
  let h: Harness;
  let client: CursorClient;
  beforeAll(async () => {
    h = await startHarness({ GATEWAY_PREWARM_TTL_MS: "400", GATEWAY_HEARTBEAT_MS: "100" }, undefined, bus);
    client = createCursorClient({ baseUrl: h.gw.url });
  });
  afterAll(async () => h.close());

  it("summarize: summary_started → summary → summary_completed, summary in the checkpoint and in later prompts", async () => {
    h.sim.enqueue(
      { text: "We are building a parser.", usage: { inputTokens: 5, outputTokens: 5 } },
      { text: "User builds a parser in Rust; tokenizer done.", usage: { inputTokens: 9, outputTokens: 7 } },
      { text: "Next: the AST.", usage: { inputTokens: 3, outputTokens: 3 } },
    );
    await client.runTurn({ requestId: "sum-1", message: runRequestMessage({ text: "let's build a parser", conversationId: "c-sum", modelId: TEST_MODEL }) });
    const s = await client.runTurn({ requestId: "sum-2", message: runWithAction("c-sum", { action: { case: "summarizeAction", value: {} } }) });
    expect(s.end).toEqual({ ok: true });
    const kinds = updateKinds(s.messages);
    expect(kinds.filter((k) => k.startsWith("summary"))).toEqual(["summaryStarted", "summary", "summaryCompleted"]);
    expect(kinds).not.toContain("textDelta");
    const summary = s.messages.find((m) => m.message.case === "interactionUpdate" && m.message.value.message.case === "summary");
    expect(summary?.message.case === "interactionUpdate" && summary.message.value.message.case === "summary" && summary.message.value.message.value.summary).toBe(
      "User builds a parser in Rust; tokenizer done.",
    );
    expect(fromBinary(ConversationSummarySchema, s.lastCheckpoint!.summary!).summary).toBe("User builds a parser in Rust; tokenizer done.");
    // The next turn's prompt starts from the summary instead of the compacted history.
    const before = h.sim.requests.length;
    await client.runTurn({ requestId: "sum-3", message: runRequestMessage({ text: "what next?", conversationId: "c-sum", modelId: TEST_MODEL }) });
    const body = JSON.stringify(h.sim.requests[before]!.body);
    expect(body).toContain("Summary of the conversation so far");
    expect(body).not.toContain("let's build a parser");
  });

  it("prewarm: a checkpoint and heartbeats, reused by the run_request that follows", async () => {
    h.sim.enqueue({ text: "warm answer", usage: { inputTokens: 2, outputTokens: 2 } });
    const prewarm = create(AgentClientMessageSchema, {
      message: { case: "prewarmRequest", value: { conversationId: "c-warm", requestedModel: { modelId: TEST_MODEL } } },
    });
    let ranRequest = false;
    const r = await client.runTurn({
      requestId: "warm-1",
      message: prewarm,
      onMessage: async (m, t) => {
        if (ranRequest || m.message.case !== "conversationCheckpointUpdate") return;
        ranRequest = true;
        // The run_request names no model: the prewarm's is reused.
        const run = runRequestMessage({ text: "hello warm", conversationId: "c-warm", modelId: "" });
        if (run.message.case === "runRequest") run.message.value.requestedModel = undefined;
        await t.append(run);
      },
    });
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toBe("warm answer");
    expect(r.checkpoints).toBeGreaterThanOrEqual(2);
  });

  it("prewarm is reused by a run_request on another request id of the same conversation; the prewarm then ends {}", async () => {
    h.sim.enqueue({ text: "reused across requests", usage: { inputTokens: 1, outputTokens: 1 } });
    const prewarm = create(AgentClientMessageSchema, { message: { case: "prewarmRequest", value: { conversationId: "c-warm-x", requestedModel: { modelId: TEST_MODEL } } } });
    let prepared!: () => void;
    const ready = new Promise<void>((resolve) => (prepared = resolve));
    const warm = client.runTurn({
      requestId: "warm-x-1",
      message: prewarm,
      onMessage: (m) => {
        if (m.message.case === "conversationCheckpointUpdate") prepared();
      },
    });
    await ready; // the prewarm is prepared (its checkpoint arrived)
    // The run names no model: the conversation's prewarm supplies it.
    const run = runRequestMessage({ text: "go", conversationId: "c-warm-x", modelId: "" });
    if (run.message.case === "runRequest") run.message.value.requestedModel = undefined;
    const r = await client.runTurn({ requestId: "warm-x-2", message: run });
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toBe("reused across requests");
    expect((await warm).end).toEqual({ ok: true });
  });

  it("prewarm without a following run_request ends {} after its TTL, with heartbeats meanwhile", async () => {
    const before = h.sim.requests.length;
    const prewarm = create(AgentClientMessageSchema, { message: { case: "prewarmRequest", value: { conversationId: "c-warm-2", requestedModel: { modelId: TEST_MODEL } } } });
    const r = await client.runTurn({ requestId: "warm-2", message: prewarm });
    expect(r.end).toEqual({ ok: true });
    expect(r.checkpoints).toBe(1);
    expect(r.heartbeats).toBeGreaterThanOrEqual(1);
    expect(h.sim.requests.length).toBe(before);
  });

  it("a new run_request in a conversation supersedes its older live run", async () => {
    h.sim.enqueue(
      { text: ["slow ", "old ", "answer ", "never ", "done"], chunkDelayMs: 300, usage: { inputTokens: 1, outputTokens: 1 } },
      { text: "new answer", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    const older = client.runTurn({ requestId: "sup-old", message: runRequestMessage({ text: "first", conversationId: "c-sup", modelId: TEST_MODEL }) });
    await h.sim.waitFor((reqs) => reqs.some((q) => JSON.stringify(q.body).includes("first")));
    const newer = await client.runTurn({ requestId: "sup-new", message: runRequestMessage({ text: "second", conversationId: "c-sup", modelId: TEST_MODEL }) });
    expect(newer.end).toEqual({ ok: true });
    const old = await older;
    expect(old.end).toMatchObject({ ok: false, code: "canceled" });
    if (old.end?.ok === false) expect(old.end.message).toMatch(/superseded/);
  });

  it("compacts automatically near the context window, keeping the current turn verbatim", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue(
      { text: "A long explanation about TOKENIZERS and lexers.", usage: { inputTokens: 5, outputTokens: 50 } },
      { text: "Earlier: the user asked about tokenizers.", usage: { inputTokens: 40, outputTokens: 8 } },
      { text: "Parsers come next.", usage: { inputTokens: 12, outputTokens: 4 } },
    );
    await client.runTurn({ requestId: "compact-1", message: runRequestMessage({ text: "explain tokenizers", conversationId: "c-compact", modelId: "sim-small-window" }) });
    const r = await client.runTurn({ requestId: "compact-2", message: runRequestMessage({ text: "and parsers?", conversationId: "c-compact", modelId: "sim-small-window" }) });
    expect(r.end).toEqual({ ok: true });
    const kinds = updateKinds(r.messages);
    expect(kinds.filter((k) => k.startsWith("summary"))).toEqual(["summaryStarted", "summary", "summaryCompleted"]);
    expect(r.textDeltas).toBe("Parsers come next.");
    const [, summaryPass, realPass] = h.sim.requests.slice(before).map((q) => q.body as { tools?: unknown[] });
    expect(JSON.stringify(summaryPass)).toContain("TOKENIZERS");
    expect(summaryPass?.tools ?? []).toHaveLength(0);
    const real = JSON.stringify(realPass);
    expect(real).toContain("Earlier: the user asked about tokenizers.");
    expect(real).toContain("and parsers?");
    expect(real).not.toContain("TOKENIZERS");
    // turn_ended counts both passes of the turn.
    expect(r.turnEnded).toMatchObject({ inputTokens: 52n, outputTokens: 12n });
  });

  it("runs the client's pre_compact hook before compacting; its reply guides the summary and closes it", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue(
      { text: "A long answer about LEXERS.", usage: { inputTokens: 5, outputTokens: 50 } },
      { text: "Summary keeping API names.", usage: { inputTokens: 40, outputTokens: 8 } },
      { text: "Done.", usage: { inputTokens: 12, outputTokens: 4 } },
    );
    await client.runTurn({ requestId: "hook-1", message: runRequestMessage({ text: "explain lexers", conversationId: "c-hook", modelId: "sim-small-window" }) });
    const msg = runRequestMessage({ text: "continue", conversationId: "c-hook", modelId: "sim-small-window" });
    if (msg.message.case !== "runRequest" || msg.message.value.action?.action.case !== "userMessageAction") throw new Error("unreachable");
    msg.message.value.action.action.value.requestContext = create(RequestContextSchema, { hooksConfig: { configuredSteps: ["preCompact"] } });
    let hooked = 0;
    const r = await client.runTurn({
      requestId: "hook-2",
      message: msg,
      onMessage: async (m, t) => {
        if (m.message.case !== "execServerMessage" || m.message.value.message.case !== "executeHookArgs") return;
        hooked++;
        expect(m.message.value.message.value.request?.request.case).toBe("preCompact");
        await t.append(create(AgentClientMessageSchema, {
          message: {
            case: "execClientMessage",
            value: {
              id: m.message.value.id, execId: m.message.value.execId,
              message: { case: "executeHookResult", value: { response: { response: { case: "preCompact", value: { userMessage: "keep API names" } } } } },
            },
          },
        }));
      },
    });
    expect(hooked).toBe(1);
    expect(r.end).toEqual({ ok: true });
    const completed = r.messages.find((m) => m.message.case === "interactionUpdate" && m.message.value.message.case === "summaryCompleted");
    expect(completed?.message.case === "interactionUpdate" && completed.message.value.message.case === "summaryCompleted" && completed.message.value.message.value.hookMessage).toBe("keep API names");
    expect(JSON.stringify(h.sim.requests[before + 1]!.body)).toContain("keep API names");
  });

  it("background_task_completion wakes an AwaitShell waiting on that shell", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue(
      { toolCalls: [{ id: "aw1", name: "AwaitShell", arguments: JSON.stringify({ shell_id: 12, block_until_ms: 60_000 }) }], usage: { inputTokens: 1, outputTokens: 1 } },
      { text: "The build finished.", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    let sent = false;
    const started = Date.now();
    const r = await client.runTurn({
      requestId: "await-1",
      message: runRequestMessage({ text: "wait for the build", conversationId: "c-await", modelId: TEST_MODEL }),
      onMessage: async (m, t) => {
        if (sent || !(m.message.case === "interactionUpdate" && m.message.value.message.case === "toolCallStarted")) return;
        sent = true;
        await t.append(conversationActionMessage({
          action: { case: "backgroundTaskCompletionAction", value: { completions: [{ taskId: "12", title: "npm run build", detail: "exit 0: built in 3s" }] } },
        }));
      },
    });
    expect(r.end).toEqual({ ok: true });
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(JSON.stringify(h.sim.requests[before + 1]!.body)).toContain("built in 3s");
  });

  it.each([
    ["start_plan_action (plan mode)", { action: { case: "startPlanAction", value: { userMessage: { text: "plan the migration", messageId: "sp1" }, isSpec: false } } }, "plan the migration"],
    ["execute_plan_action", { action: { case: "executePlanAction", value: { planFileContent: "1. MIGRATE-TABLES\n2. backfill", planFilePath: "plans/m.md", executionMode: AgentMode.AGENT } } }, "MIGRATE-TABLES"],
    ["async_ask_question_completion_action", {
      action: {
        case: "asyncAskQuestionCompletionAction",
        value: { originalToolCallId: "q-7", result: { result: { case: "success", value: { answers: [{ questionId: "db", selectedOptionIds: ["POSTGRES-CHOICE"], freeformText: "" }] } } } },
      },
    }, "POSTGRES-CHOICE"],
    ["subscription_notification_action", { action: { case: "subscriptionNotificationAction", value: { notifications: [{ text: "CI FAILED on main", messageId: "n1" }] } } }, "CI FAILED on main"],
    ["background_task_completion_action", { action: { case: "backgroundTaskCompletionAction", value: { completions: [{ taskId: "t9", title: "nightly-build", detail: "BUILD-OK" }] } } }, "BUILD-OK"],
    ["goal_continuation_action", { action: { case: "goalContinuationAction", value: {} } }, "Continue working toward"],
  ] as const)("%s starts a run whose prompt carries it", async (name, action, expected) => {
    const before = h.sim.requests.length;
    h.sim.enqueue({ text: `handled ${name}`, usage: { inputTokens: 1, outputTokens: 1 } });
    const r = await client.runTurn({ requestId: `act-${name.split(" ")[0]}`, message: runWithAction(`c-act-${name.split(" ")[0]}`, action as Action) });
    expect(r.end).toEqual({ ok: true });
    expect(JSON.stringify(h.sim.requests[before]!.body)).toContain(expected);
  });

  it("start_plan_action offers the plan-mode tools only", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue({ text: "planned", usage: { inputTokens: 1, outputTokens: 1 } });
    await client.runTurn({
      requestId: "act-plan-tools",
      message: runWithAction("c-act-plan-tools", { action: { case: "startPlanAction", value: { userMessage: { text: "plan it", messageId: "sp2" }, isSpec: false } } }),
    });
    const tools = ((h.sim.requests[before]!.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((t) => t.function.name);
    expect(tools).toContain("CreatePlan");
    expect(tools).not.toContain("Write");
  });

  it("cancel_subagent aborts the pending subagent exec", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue(
      { toolCalls: [{ id: "task1", name: "Task", arguments: JSON.stringify({ description: "explore", prompt: "look around" }) }], usage: { inputTokens: 1, outputTokens: 1 } },
      { text: "Stopped the subagent.", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    let canceled = false;
    const r = await client.runTurn({
      requestId: "act-cancel-sub",
      message: runRequestMessage({ text: "explore", conversationId: "c-cancel-sub", modelId: TEST_MODEL }),
      onMessage: async (m, t) => {
        if (canceled || m.message.case !== "execServerMessage" || m.message.value.message.case !== "subagentArgs") return;
        canceled = true;
        await t.append(conversationActionMessage({ action: { case: "cancelSubagentAction", value: { subagentId: "g1m1_1_tc0" } } }));
      },
    });
    expect(r.end).toEqual({ ok: true });
    expect(r.messages.some((m) => m.message.case === "execServerControlMessage")).toBe(true);
    expect(JSON.stringify(h.sim.requests[before + 1]!.body)).toContain("canceled this subagent");
  });

  it("resume with nothing to resume ends cleanly without a provider call", async () => {
    const before = h.sim.requests.length;
    const r = await client.runTurn({ requestId: "resume-empty", message: runWithAction("c-resume-empty", { action: { case: "resumeAction", value: {} } }) });
    expect(r.end).toEqual({ ok: true });
    expect(h.sim.requests.length).toBe(before);
  });

  it("resume continues an existing conversation without a new user message", async () => {
    h.sim.enqueue({ text: "first", usage: { inputTokens: 1, outputTokens: 1 } }, { text: "continued", usage: { inputTokens: 1, outputTokens: 1 } });
    await client.runTurn({ requestId: "resume-1", message: runRequestMessage({ text: "start", conversationId: "c-resume", modelId: TEST_MODEL }) });
    const r = await client.runTurn({ requestId: "resume-2", message: runWithAction("c-resume", { action: { case: "resumeAction", value: {} } }) });
    expect(r.textDeltas).toBe("continued");
  });

  it("shell_command is recorded into the conversation with no provider call", async () => {
    const before = h.sim.requests.length;
    const r = await client.runTurn({
      requestId: "shell-cmd",
      message: runWithAction("c-shell", { action: { case: "shellCommandAction", value: { shellCommand: { command: "npm test" }, execId: "e1" } } }),
    });
    expect(r.end).toEqual({ ok: true });
    expect(h.sim.requests.length).toBe(before);
    h.sim.enqueue({ text: "I saw it.", usage: { inputTokens: 1, outputTokens: 1 } });
    await client.runTurn({ requestId: "shell-cmd-2", message: runRequestMessage({ text: "what did I run?", conversationId: "c-shell", modelId: TEST_MODEL }) });
    expect(JSON.stringify(h.sim.requests.at(-1)!.body)).toContain("npm test");
  });

  it("inject_context on a live run: queued, then delivered with the next provider pass", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue(
      { toolCalls: [{ id: "s1", name: "Shell", arguments: JSON.stringify({ command: "make" }) }], usage: { inputTokens: 1, outputTokens: 1 } },
      { text: "Using the injected hint.", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    let injected = false;
    const r = await client.runTurn({
      requestId: "inject-1",
      message: runRequestMessage({ text: "build it", conversationId: "c-inject", modelId: TEST_MODEL }),
      onMessage: async (m, t) => {
        if (m.message.case !== "execServerMessage" || injected) return;
        injected = true;
        // While the shell runs, the user adds context; then the shell finishes.
        await t.append(conversationActionMessage({
          action: { case: "injectContextAction", value: { injectionId: "inj-1", expectedRunId: "", payload: { case: "userContext", value: { userMessage: { text: "use -j4" } } } } },
        }));
        const e = m.message.value;
        await t.append(create(AgentClientMessageSchema, { message: { case: "execClientMessage", value: { id: e.id, execId: e.execId, message: { case: "shellStream", value: { event: { case: "start", value: {} } } } } } }));
        await t.append(create(AgentClientMessageSchema, { message: { case: "execClientMessage", value: { id: e.id, execId: e.execId, message: { case: "shellStream", value: { event: { case: "exit", value: { code: 0, cwd: "/", aborted: false } } } } } } }));
      },
    });
    expect(r.end).toEqual({ ok: true });
    const states = r.messages.flatMap((m) =>
      m.message.case === "interactionUpdate" && m.message.value.message.case === "contextInjectionState"
        ? [m.message.value.message.value.state?.state.case]
        : [],
    );
    expect(states).toEqual(["queued", "delivered"]);
    expect(JSON.stringify(h.sim.requests[before + 1]!.body)).toContain("use -j4");
  });

  it("inject_context naming another run is rejected with a reason", async () => {
    h.sim.enqueue({ text: "done", firstByteDelayMs: 200, usage: { inputTokens: 1, outputTokens: 1 } });
    let sent = false;
    const r = await client.runTurn({
      requestId: "inject-2",
      message: runRequestMessage({ text: "hi", conversationId: "c-inject-2", modelId: TEST_MODEL, runId: "run-A" }),
      onMessage: async (m, t) => {
        if (sent || m.message.case !== "conversationCheckpointUpdate") return;
        sent = true;
        await t.append(conversationActionMessage({
          action: { case: "injectContextAction", value: { injectionId: "inj-2", expectedRunId: "run-B", payload: { case: "userContext", value: { userMessage: { text: "x" } } } } },
        }));
      },
    });
    const rejected = r.messages.find((m) => m.message.case === "interactionUpdate" && m.message.value.message.case === "contextInjectionState");
    if (rejected?.message.case !== "interactionUpdate" || rejected.message.value.message.case !== "contextInjectionState") throw new Error("no state");
    const st = rejected.message.value.message.value.state?.state;
    expect(st?.case).toBe("rejected");
    expect(st?.case === "rejected" && st.value.reason).toMatch(/run-A/);
  });

  it("background_shell: the run stops waiting for that tool call", async () => {
    h.sim.enqueue(
      { toolCalls: [{ id: "bg1", name: "Shell", arguments: JSON.stringify({ command: "npm run dev" }) }], usage: { inputTokens: 1, outputTokens: 1 } },
      { text: "The dev server runs in the background.", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    let moved = false;
    const r = await client.runTurn({
      requestId: "bg-1",
      message: runRequestMessage({ text: "start the dev server", conversationId: "c-bg", modelId: TEST_MODEL }),
      onMessage: async (m, t) => {
        if (m.message.case !== "execServerMessage" || moved) return;
        moved = true;
        await t.append(conversationActionMessage({ action: { case: "backgroundShellAction", value: { toolCallId: "g1m1_1_tc0" } } }));
      },
    });
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toBe("The dev server runs in the background.");
  });
});

describe.each(["memory", "redis"] as const)("import of a conversation started elsewhere (%s bus)", (bus) => {
  let h: Harness;
  let client: CursorClient;
  beforeAll(async () => {
    h = await startHarness({}, undefined, bus);
    client = createCursorClient({ baseUrl: h.gw.url });
  });
  afterAll(async () => h.close());

  it("resolves the client's turns from verified pre-fetched blobs and get_blob_args, and the model sees them", async () => {
    const earlier = buildTurnBlobs({
      requestId: "elsewhere-1",
      userText: "remember the codeword PELICAN",
      messageId: "m-old",
      mode: AgentMode.AGENT,
      steps: [{ case: "assistantMessage", value: create(AssistantMessageSchema, { text: "Noted: PELICAN." }) }],
    });
    const clientBlobs = new Map(earlier.blobs.map((b) => [Buffer.from(b.id).toString("hex"), b.data]));
    const turnBlob = earlier.blobs.at(-1)!;
    const msg = runRequestMessage({ text: "what was the codeword?", conversationId: "c-imported", modelId: TEST_MODEL });
    if (msg.message.case !== "runRequest") throw new Error("unreachable");
    msg.message.value.conversationState = create(ConversationStateStructureSchema, { turns: [earlier.turnId] });
    // The turn arrives inline (verified); a forged blob is ignored; the rest is fetched with get_blob_args.
    msg.message.value.preFetchedBlobs = [
      create(PreFetchedBlobSchema, { id: turnBlob.id, value: turnBlob.data }),
      create(PreFetchedBlobSchema, { id: earlier.blobs[0]!.id, value: new TextEncoder().encode("forged") }),
    ];
    h.sim.enqueue({ text: "PELICAN", usage: { inputTokens: 3, outputTokens: 1 } });
    const gets: string[] = [];
    const r = await client.runTurn({
      requestId: "import-1",
      message: msg,
      blobs: clientBlobs,
      onMessage: (m) => {
        if (m.message.case === "kvServerMessage" && m.message.value.message.case === "getBlobArgs") gets.push(Buffer.from(m.message.value.message.value.blobId).toString("hex"));
      },
    });
    expect(r.end).toEqual({ ok: true });
    expect(gets.length).toBeGreaterThanOrEqual(1);
    expect(gets).not.toContain(Buffer.from(turnBlob.id).toString("hex"));
    const body = JSON.stringify(h.sim.requests.at(-1)!.body);
    expect(body).toContain("remember the codeword PELICAN");
    expect(body).toContain("Noted: PELICAN.");
    // The new checkpoint keeps the imported turn and adds this one.
    expect(r.lastCheckpoint?.turns.map((t) => Buffer.from(t).toString("hex"))[0]).toBe(Buffer.from(earlier.turnId).toString("hex"));
    expect(r.lastCheckpoint?.turns).toHaveLength(2);
  });
});
