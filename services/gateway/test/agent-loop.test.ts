// The agent loop through the whole gateway: a scripted model calls tools, the test client runs
// them on a temporary workspace like Cursor does, and the turn completes with the results.
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  cancelMessage, createCursorClient, createWorkspaceExecutor, makeWorkspace, runRequestMessage,
  type CursorClient, type WorkspaceExecutor,
} from "@byok/testing";
import { create, fromBinary } from "@bufbuild/protobuf";
import { AgentClientMessageSchema, AgentMode, ConversationPlanSchema, McpToolsSchema, ShellStreamSchema, type AgentServerMessage } from "@byok/wire";
import { startHarness, TEST_MODEL, type Harness } from "./harness.js";

// Every scenario runs on embedded mode's bus and on distributed mode's (Redis) bus.

function kinds(messages: AgentServerMessage[]): string[] {
  return messages.map((m) =>
    m.message.case === "interactionUpdate" ? `update.${m.message.value.message.case}` : String(m.message.case),
  );
}

describe.each(["memory", "redis"] as const)("agent loop (%s bus)", (bus) => {
  let h: Harness;
  let client: CursorClient;
  let ws: WorkspaceExecutor;

  beforeAll(async () => {
    h = await startHarness({}, undefined, bus);
    client = createCursorClient({ baseUrl: h.gw.url });
    const dir = await makeWorkspace(await mkdtemp(join(tmpdir(), "ws-")), { "src/a.ts": "export const answer = 41;\n" });
    ws = createWorkspaceExecutor(dir);
  });
  afterAll(async () => h.close());

  const answerExecs = async (m: AgentServerMessage, t: { append(msg: ReturnType<typeof cancelMessage>): Promise<unknown> }) => {
    if (m.message.case !== "execServerMessage") return;
    for (const reply of await ws.execute(m.message.value)) await t.append(reply);
  };

  it("runs a multi-step read → edit → shell loop and ends with the model's answer", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue(
      { text: "Reading the file.", toolCalls: [{ id: "functions.Read:0", name: "Read", arguments: JSON.stringify({ path: "src/a.ts" }) }], usage: { inputTokens: 10, outputTokens: 5 } },
      { toolCalls: [{ id: "functions.Edit:0", name: "Edit", arguments: JSON.stringify({ path: "src/a.ts", old_string: "41", new_string: "42" }) }], usage: { inputTokens: 20, outputTokens: 6 } },
      { toolCalls: [{ id: "functions.Shell:0", name: "Shell", arguments: JSON.stringify({ command: "cat src/a.ts && echo done-shell" }) }], usage: { inputTokens: 30, outputTokens: 7 } },
      { text: "The answer is now 42.", usage: { inputTokens: 40, outputTokens: 8 } },
    );
    const r = await client.runTurn({
      requestId: "loop-1",
      message: runRequestMessage({ text: "make the answer 42", conversationId: "c-loop", modelId: TEST_MODEL }),
      onMessage: answerExecs,
    });
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toContain("The answer is now 42.");
    // The file was really edited through read → apply → write (the write returns the content
    // after it, which stands for the read-back).
    expect(await readFile(join(ws.root, "src/a.ts"), "utf8")).toBe("export const answer = 42;\n");
    expect(ws.received).toEqual(["readArgs", "readArgs", "writeArgs", "shellStreamArgs"]);
    // Frame order per tool: started → checkpoint → exec → completed → checkpoint.
    const k = kinds(r.messages).filter((x) => x !== "kvServerMessage");
    const firstStart = k.indexOf("update.toolCallStarted");
    expect(k.slice(firstStart, firstStart + 3)).toEqual(["update.toolCallStarted", "conversationCheckpointUpdate", "execServerMessage"]);
    expect(k.filter((x) => x === "update.toolCallStarted")).toHaveLength(3);
    expect(k.filter((x) => x === "update.toolCallCompleted")).toHaveLength(3);
    expect(k).toContain("update.shellOutputDelta");
    expect(k.at(-1)).toBe("update.turnEnded");
    // turn_ended sums every pass of the turn.
    expect(r.turnEnded).toMatchObject({ inputTokens: 100n, outputTokens: 26n });
    // The model saw each result: the file content, then the shell output.
    const bodies = h.sim.requests.slice(before).map((q) => JSON.stringify(q.body));
    expect(bodies).toHaveLength(4);
    expect(bodies[1]).toContain("export const answer = 41;");
    expect(bodies[3]).toContain("done-shell");
    expect(bodies[3]).toContain("export const answer = 42;");
    // The completed Read renders in the client as read_tool_call.
    const completed = r.messages.find((m) => m.message.case === "interactionUpdate" && m.message.value.message.case === "toolCallCompleted");
    expect(completed?.message.case === "interactionUpdate" && completed.message.value.message.case === "toolCallCompleted" && completed.message.value.message.value.toolCall?.tool.case).toBe("readToolCall");
  });

  it("round-trips an AskQuestion through the interaction bridge", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue(
      {
        toolCalls: [{
          id: "q1", name: "AskQuestion",
          arguments: JSON.stringify({ questions: [{ id: "db", prompt: "Which database?", options: [{ id: "pg", label: "PostgreSQL" }, { id: "my", label: "MySQL" }] }] }),
        }],
        usage: { inputTokens: 1, outputTokens: 1 },
      },
      { text: "PostgreSQL it is.", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    let queryId = 0;
    const r = await client.runTurn({
      requestId: "loop-ask",
      message: runRequestMessage({ text: "set up a db", conversationId: "c-ask", modelId: TEST_MODEL }),
      onMessage: async (m, t) => {
        if (m.message.case !== "interactionQuery") return;
        queryId = m.message.value.id;
        expect(m.message.value.query.case).toBe("askQuestionInteractionQuery");
        await t.append(create(AgentClientMessageSchema, {
          message: {
            case: "interactionResponse",
            value: {
              id: queryId,
              result: {
                case: "askQuestionInteractionResponse",
                value: { result: { result: { case: "success", value: { answers: [{ questionId: "db", selectedOptionIds: ["pg"], freeformText: "" }] } } } },
              },
            },
          },
        }));
      },
    });
    expect(queryId).toBeGreaterThan(0);
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toBe("PostgreSQL it is.");
    expect(JSON.stringify(h.sim.requests[before + 1]!.body)).toMatch(/PostgreSQL/);
  });

  it("treats an interaction response of the wrong branch as an error, not an answer", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue(
      { toolCalls: [{ id: "q2", name: "AskQuestion", arguments: JSON.stringify({ questions: [{ id: "x", prompt: "Sure?", options: [{ id: "y", label: "Yes" }, { id: "n", label: "No" }] }] }) }], usage: { inputTokens: 1, outputTokens: 1 } },
      { text: "ok", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    const r = await client.runTurn({
      requestId: "loop-mismatch",
      message: runRequestMessage({ text: "go", conversationId: "c-mismatch", modelId: TEST_MODEL }),
      onMessage: async (m, t) => {
        if (m.message.case !== "interactionQuery") return;
        await t.append(create(AgentClientMessageSchema, {
          message: { case: "interactionResponse", value: { id: m.message.value.id, result: { case: "webSearchRequestResponse", value: {} } } },
        }));
      },
    });
    expect(r.end).toEqual({ ok: true });
    expect(JSON.stringify(h.sim.requests[before + 1]!.body)).toMatch(/does not answer/);
  });

  it("calls an MCP tool of the run's MCP definitions through mcp_args", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue(
      { toolCalls: [{ id: "m1", name: "CallMcpTool", arguments: JSON.stringify({ server: "github", tool_name: "create_issue", arguments: { title: "Bug" } }) }], usage: { inputTokens: 1, outputTokens: 1 } },
      { text: "Issue filed.", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    const msg = runRequestMessage({ text: "file a bug", conversationId: "c-mcp", modelId: TEST_MODEL });
    if (msg.message.case !== "runRequest") throw new Error("unreachable");
    msg.message.value.mcpTools = create(McpToolsSchema, {
      mcpTools: [{ name: "github-create_issue", providerIdentifier: "github", toolName: "create_issue", description: "Create an issue", inputSchemaJson: JSON.stringify({ type: "object", properties: { title: { type: "string" } }, required: ["title"] }) }],
    });
    let mcpArgs: unknown;
    const r = await client.runTurn({
      requestId: "loop-mcp",
      message: msg,
      onMessage: async (m, t) => {
        if (m.message.case !== "execServerMessage") return;
        const e = m.message.value;
        expect(e.message.case).toBe("mcpArgs");
        if (e.message.case !== "mcpArgs") return;
        mcpArgs = { tool: e.message.value.toolName, server: e.message.value.providerIdentifier };
        await t.append(create(AgentClientMessageSchema, {
          message: {
            case: "execClientMessage",
            value: { id: e.id, execId: e.execId, message: { case: "mcpResult", value: { result: { case: "success", value: { content: [{ content: { case: "text", value: { text: "created issue #7" } } }], isError: false } } } } },
          },
        }));
      },
    });
    expect(mcpArgs).toEqual({ tool: "create_issue", server: "github" });
    expect(r.end).toEqual({ ok: true });
    expect(JSON.stringify(h.sim.requests[before + 1]!.body)).toContain("created issue #7");
  });

  it("runs a shell that goes to the background, then writes to its stdin", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue(
      { toolCalls: [{ id: "sh1", name: "Shell", arguments: JSON.stringify({ command: "python3 repl.py", is_background: true }) }], usage: { inputTokens: 1, outputTokens: 1 } },
      { toolCalls: [{ id: "sh2", name: "WriteShellStdin", arguments: JSON.stringify({ shell_id: 7, chars: "print(6*7)\n" }) }], usage: { inputTokens: 1, outputTokens: 1 } },
      { text: "Sent.", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    const stdin: string[] = [];
    const r = await client.runTurn({
      requestId: "loop-stdin",
      message: runRequestMessage({ text: "start a repl and compute", conversationId: "c-stdin", modelId: TEST_MODEL }),
      onMessage: async (m, t) => {
        if (m.message.case !== "execServerMessage") return;
        const e = m.message.value;
        const reply = (message: Parameters<typeof create<typeof AgentClientMessageSchema>>[1]) => t.append(create(AgentClientMessageSchema, message));
        if (e.message.case === "shellStreamArgs") {
          for (const ev of [
            create(ShellStreamSchema, { event: { case: "start", value: {} } }),
            create(ShellStreamSchema, { event: { case: "stdout", value: { data: ">>> " } } }),
            create(ShellStreamSchema, { event: { case: "backgrounded", value: { shellId: 7, command: "python3 repl.py", workingDirectory: "/w" } } }),
          ]) {
            await reply({ message: { case: "execClientMessage", value: { id: e.id, execId: e.execId, message: { case: "shellStream", value: ev } } } });
          }
        } else if (e.message.case === "writeShellStdinArgs") {
          stdin.push(e.message.value.chars);
          await reply({
            message: { case: "execClientMessage", value: { id: e.id, execId: e.execId, message: { case: "writeShellStdinResult", value: { result: { case: "success", value: { shellId: 7, terminalFileLengthBeforeInputWritten: 4 } } } } } },
          });
        }
      },
    });
    expect(r.end).toEqual({ ok: true });
    expect(stdin).toEqual(["print(6*7)\n"]);
    // The model learned the shell id from the backgrounded shell.
    expect(JSON.stringify(h.sim.requests[before + 1]!.body)).toMatch(/7/);
    expect(kinds(r.messages)).toContain("update.shellOutputDelta");
  });

  it("round-trips a plan in plan mode through create_plan_request_query", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue(
      { toolCalls: [{ id: "p1", name: "CreatePlan", arguments: JSON.stringify({ name: "Parser", overview: "Build a parser", plan: "1. tokens\n2. AST" }) }], usage: { inputTokens: 1, outputTokens: 1 } },
      { text: "The plan is saved.", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    let queried = false;
    const r = await client.runTurn({
      requestId: "loop-plan",
      message: runRequestMessage({ text: "plan a parser", conversationId: "c-plan", modelId: TEST_MODEL, mode: AgentMode.PLAN }),
      onMessage: async (m, t) => {
        if (m.message.case !== "interactionQuery" || m.message.value.query.case !== "createPlanRequestQuery") return;
        queried = true;
        await t.append(create(AgentClientMessageSchema, {
          message: {
            case: "interactionResponse",
            value: { id: m.message.value.id, result: { case: "createPlanRequestResponse", value: { result: { planUri: "file:///plans/parser.md", result: { case: "success", value: {} } } } } },
          },
        }));
      },
    });
    expect(queried).toBe(true);
    expect(r.end).toEqual({ ok: true });
    // Plan mode offers no file-changing tools to the model.
    const toolNames = ((h.sim.requests[before]!.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((x) => x.function.name);
    expect(toolNames).toContain("CreatePlan");
    expect(toolNames).not.toContain("Write");
    expect(toolNames).not.toContain("Edit");
    expect(JSON.stringify(h.sim.requests[before + 1]!.body)).toContain("parser.md");
    // The accepted plan is stored in the checkpoint.
    expect(fromBinary(ConversationPlanSchema, r.lastCheckpoint!.plan!).plan).toContain("2. AST");
  });

  it("gives the model a tool error for an unknown tool and keeps going", async () => {
    const before = h.sim.requests.length;
    h.sim.enqueue(
      { toolCalls: [{ id: "c1", name: "LaunchMissiles", arguments: "{}" }], usage: { inputTokens: 1, outputTokens: 1 } },
      { text: "Sorry, I cannot.", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    const r = await client.runTurn({ requestId: "loop-unknown", message: runRequestMessage({ text: "go", conversationId: "c-unknown-tool", modelId: TEST_MODEL }) });
    expect(r.end).toEqual({ ok: true });
    expect(JSON.stringify(h.sim.requests[before + 1]!.body)).toMatch(/LaunchMissiles/);
    expect(r.textDeltas).toBe("Sorry, I cannot.");
  });

  it("cancel during a tool aborts the pending exec and ends canceled", async () => {
    h.sim.enqueue({ toolCalls: [{ id: "s1", name: "Shell", arguments: JSON.stringify({ command: "sleep 30" }) }], usage: { inputTokens: 1, outputTokens: 1 } });
    let canceled = false;
    const r = await client.runTurn({
      requestId: "loop-cancel",
      message: runRequestMessage({ text: "go", conversationId: "c-cancel-tool", modelId: TEST_MODEL }),
      onMessage: async (m, t) => {
        // Like Cursor: the shell starts; the user presses stop before it finishes.
        if (m.message.case === "execServerMessage" && !canceled) {
          canceled = true;
          await t.append(cancelMessage("stop"));
        }
      },
    });
    expect(r.end).toMatchObject({ ok: false, code: "canceled" });
    expect(kinds(r.messages)).toContain("execServerControlMessage");
    const abort = r.messages.find((m) => m.message.case === "execServerControlMessage");
    const exec = r.messages.find((m) => m.message.case === "execServerMessage");
    if (abort?.message.case !== "execServerControlMessage" || exec?.message.case !== "execServerMessage") throw new Error("missing frames");
    expect(abort.message.value.message.case === "abort" && abort.message.value.message.value.id).toBe(exec.message.value.id);
  });
});
