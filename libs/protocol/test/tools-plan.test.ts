import { describe, expect, it } from "vitest";
import { AgentMode, TimeoutBehavior, TodoStatus } from "@byok/wire";
import { GLOB_MATCH_ALL_PATTERN, fromMcpArgs, planToolCall, type ToolPlan } from "../src/index.js";
import { asExec, asInteraction, call, ctx } from "./tools-fixtures.js";

function refusedText(p: ToolPlan): string {
  if (p.kind !== "refused") throw new Error(`expected refused, got ${p.kind}`);
  expect(p.outcome.isError).toBe(true);
  expect(p.outcome.completed.toolCallId).toBe(p.callId);
  return p.outcome.modelText;
}

describe("planToolCall: exec branches (docs/protocol.md, Bridges)", () => {
  it("Read → read_args + read_tool_call", () => {
    const p = asExec(planToolCall(call("Read", { path: "src/a.ts", offset: 10, limit: 20 }), ctx()));
    expect(p.streaming).toBe(false);
    expect(p.exec.case).toBe("readArgs");
    if (p.exec.case !== "readArgs") return;
    expect(p.exec.value).toMatchObject({ path: "src/a.ts", toolCallId: "call-1", offset: 10, limit: 20 });
    expect(p.started.toolCallId).toBe("call-1");
    expect(p.started.tool.case).toBe("readToolCall");
    if (p.started.tool.case === "readToolCall") expect(p.started.tool.value.args).toMatchObject({ path: "src/a.ts", offset: 10, limit: 20 });
  });

  it("Write → write_args + edit_tool_call", () => {
    const p = asExec(planToolCall(call("Write", { path: "a.txt", contents: "hi\n" }), ctx()));
    expect(p.exec.case).toBe("writeArgs");
    if (p.exec.case === "writeArgs") expect(p.exec.value).toMatchObject({ path: "a.txt", fileText: "hi\n", toolCallId: "call-1" });
    expect(p.started.tool.case).toBe("editToolCall");
  });

  it("Delete → delete_args + delete_tool_call", () => {
    const p = asExec(planToolCall(call("Delete", { path: "a.txt" }), ctx()));
    expect(p.exec.case).toBe("deleteArgs");
    if (p.exec.case === "deleteArgs") expect(p.exec.value).toMatchObject({ path: "a.txt", toolCallId: "call-1" });
    expect(p.started.tool.case).toBe("deleteToolCall");
  });

  it("Grep → grep_args with every option + grep_tool_call", () => {
    const p = asExec(planToolCall(call("Grep", {
      pattern: "foo", path: "src", glob: "*.ts", type: "ts", output_mode: "count", case_insensitive: true,
      context_before: 1, context_after: 2, context: 3, multiline: false, head_limit: 50, offset: 5,
    }), ctx()));
    expect(p.exec.case).toBe("grepArgs");
    if (p.exec.case !== "grepArgs") return;
    expect(p.exec.value).toMatchObject({
      pattern: "foo", path: "src", glob: "*.ts", type: "ts", outputMode: "count", caseInsensitive: true,
      contextBefore: 1, contextAfter: 2, context: 3, multiline: false, headLimit: 50, offset: 5, toolCallId: "call-1",
    });
    expect(p.started.tool.case).toBe("grepToolCall");
  });

  it("Grep defaults to content mode", () => {
    const p = asExec(planToolCall(call("Grep", { pattern: "x" }), ctx()));
    if (p.exec.case === "grepArgs") expect(p.exec.value.outputMode).toBe("content");
  });

  it("Glob → grep_args with the glob and files_with_matches + glob_tool_call", () => {
    const p = asExec(planToolCall(call("Glob", { glob_pattern: "**/*.ts", target_directory: "src" }), ctx()));
    expect(p.exec.case).toBe("grepArgs");
    if (p.exec.case !== "grepArgs") return;
    expect(p.exec.value).toMatchObject({ pattern: GLOB_MATCH_ALL_PATTERN, glob: "**/*.ts", path: "src", outputMode: "files_with_matches" });
    expect(p.started.tool.case).toBe("globToolCall");
    if (p.started.tool.case === "globToolCall") expect(p.started.tool.value.args).toMatchObject({ globPattern: "**/*.ts", targetDirectory: "src" });
  });

  it("Ls → ls_args + ls_tool_call", () => {
    const p = asExec(planToolCall(call("Ls", { path: "src", ignore: ["node_modules"] }), ctx()));
    expect(p.exec.case).toBe("lsArgs");
    if (p.exec.case === "lsArgs") expect(p.exec.value).toMatchObject({ path: "src", ignore: ["node_modules"], toolCallId: "call-1" });
    expect(p.started.tool.case).toBe("lsToolCall");
  });

  it("ReadLints → diagnostics_args + read_lints_tool_call", () => {
    const p = asExec(planToolCall(call("ReadLints", { path: "src/a.ts" }), ctx()));
    expect(p.exec.case).toBe("diagnosticsArgs");
    if (p.exec.case === "diagnosticsArgs") expect(p.exec.value).toMatchObject({ path: "src/a.ts", toolCallId: "call-1" });
    expect(p.started.tool.case).toBe("readLintsToolCall");
    if (p.started.tool.case === "readLintsToolCall") expect(p.started.tool.value.args?.paths).toEqual(["src/a.ts"]);
    const whole = asExec(planToolCall(call("ReadLints", "{}"), ctx()));
    if (whole.exec.case === "diagnosticsArgs") expect(whole.exec.value.path).toBe("");
  });

  it("Shell → shell_stream_args (streaming) + shell_tool_call", () => {
    const p = asExec(planToolCall(call("Shell", { command: "npm test", working_directory: "/w", timeout_ms: 5000, description: "run tests" }), ctx()));
    expect(p.streaming).toBe(true);
    expect(p.exec.case).toBe("shellStreamArgs");
    if (p.exec.case !== "shellStreamArgs") return;
    expect(p.exec.value).toMatchObject({
      command: "npm test", workingDirectory: "/w", timeout: 5000, toolCallId: "call-1", isBackground: false,
      timeoutBehavior: TimeoutBehavior.BACKGROUND, description: "run tests",
    });
    expect(p.exec.value.parsingResult?.parsingFailed).toBe(true);
    expect(p.started.tool.case).toBe("shellToolCall");
  });

  it("WriteShellStdin → write_shell_stdin_args; ForceBackgroundShell → force_background_shell_args", () => {
    const w = asExec(planToolCall(call("WriteShellStdin", { shell_id: 7, chars: "y\n" }), ctx()));
    expect(w.exec.case).toBe("writeShellStdinArgs");
    if (w.exec.case === "writeShellStdinArgs") expect(w.exec.value).toMatchObject({ shellId: 7, chars: "y\n" });
    expect(w.started.tool.case).toBe("writeShellStdinToolCall");
    const f = asExec(planToolCall(call("ForceBackgroundShell", { tool_call_id: "call-0" }), ctx()));
    expect(f.exec.case).toBe("forceBackgroundShellArgs");
    if (f.exec.case === "forceBackgroundShellArgs") expect(f.exec.value.toolCallId).toBe("call-0");
  });

  it("AwaitShell has no exec branch: await_shell plan + await_tool_call", () => {
    const p = planToolCall(call("AwaitShell", { shell_id: 3, block_until_ms: 1000, pattern: "ready" }), ctx());
    expect(p.kind).toBe("await_shell");
    if (p.kind !== "await_shell") return;
    expect(p).toMatchObject({ shellId: 3, blockUntilMs: 1000 });
    expect(p.args).toMatchObject({ taskId: "3", blockUntilMs: 1000, regex: "ready" });
    expect(p.started.tool.case).toBe("awaitToolCall");
  });

  it("Task → subagent_args + task_tool_call; read-only in plan mode", () => {
    const p = asExec(planToolCall(call("Task", { description: "explore", prompt: "find x", subagent_type: "explore", model: "m1" }), ctx()));
    expect(p.exec.case).toBe("subagentArgs");
    if (p.exec.case !== "subagentArgs") return;
    expect(p.exec.value).toMatchObject({ toolCallId: "call-1", prompt: "find x", subagentType: "explore", modelId: "m1", readonly: false });
    expect(p.started.tool.case).toBe("taskToolCall");
    if (p.started.tool.case === "taskToolCall") expect(p.started.tool.value.args?.subagentType?.type.case).toBe("explore");
    const plan = asExec(planToolCall(call("Task", { description: "d", prompt: "p" }), ctx({ mode: AgentMode.PLAN })));
    if (plan.exec.case === "subagentArgs") expect(plan.exec.value.readonly).toBe(true);
  });

  it("CallMcpTool and direct MCP tools → mcp_args + mcp_tool_call", () => {
    const viaCall = asExec(planToolCall(call("CallMcpTool", { server: "github", tool_name: "create_issue", arguments: { title: "T", n: 2 } }), ctx()));
    const direct = asExec(planToolCall(call("mcp__github__create_issue", { title: "T", n: 2 }), ctx()));
    for (const p of [viaCall, direct]) {
      expect(p.exec.case).toBe("mcpArgs");
      if (p.exec.case !== "mcpArgs") continue;
      expect(p.exec.value).toMatchObject({ name: "github-create_issue", toolName: "create_issue", providerIdentifier: "github", toolCallId: "call-1" });
      expect(fromMcpArgs(p.exec.value.args)).toEqual({ title: "T", n: 2 });
      expect(p.started.tool.case).toBe("mcpToolCall");
    }
  });

  it("ListMcpResources / FetchMcpResource → list_mcp_resources_exec_args / read_mcp_resource_exec_args", () => {
    const l = asExec(planToolCall(call("ListMcpResources", { server: "docs" }), ctx()));
    expect(l.exec.case).toBe("listMcpResourcesExecArgs");
    if (l.exec.case === "listMcpResourcesExecArgs") expect(l.exec.value.server).toBe("docs");
    expect(l.started.tool.case).toBe("listMcpResourcesToolCall");
    const r = asExec(planToolCall(call("FetchMcpResource", { server: "docs", uri: "docs://a" }), ctx()));
    expect(r.exec.case).toBe("readMcpResourceExecArgs");
    if (r.exec.case === "readMcpResourceExecArgs") expect(r.exec.value).toMatchObject({ server: "docs", uri: "docs://a", toolCallId: "call-1" });
    expect(r.started.tool.case).toBe("readMcpResourceToolCall");
  });

  it("Edit → edit plan whose first exec reads the file", () => {
    const p = planToolCall(call("Edit", { path: "a.ts", old_string: "a", new_string: "b" }), ctx());
    expect(p.kind).toBe("edit");
    if (p.kind !== "edit") return;
    expect(p.exec.case).toBe("readArgs");
    if (p.exec.case === "readArgs") expect(p.exec.value).toMatchObject({ path: "a.ts", toolCallId: "call-1" });
    expect(p.exec.value).not.toHaveProperty("limit", expect.anything());
    expect(p.started.tool.case).toBe("editToolCall");
  });
});

describe("planToolCall: interaction queries", () => {
  it("AskQuestion → ask_question_interaction_query", () => {
    const p = asInteraction(planToolCall(call("AskQuestion", {
      title: "Pick", questions: [{ id: "q1", prompt: "Which?", options: [{ id: "a", label: "A" }, { id: "b", label: "B" }], allow_multiple: true }],
    }), ctx()));
    expect(p.query.case).toBe("askQuestionInteractionQuery");
    if (p.query.case !== "askQuestionInteractionQuery") return;
    expect(p.query.value.toolCallId).toBe("call-1");
    expect(p.query.value.args?.questions[0]).toMatchObject({ id: "q1", prompt: "Which?", allowMultiple: true });
    expect(p.started.tool.case).toBe("askQuestionToolCall");
  });

  it("CreatePlan → create_plan_request_query with pending todos", () => {
    const p = asInteraction(planToolCall(call("CreatePlan", { name: "P", overview: "O", plan: "# Plan", todos: [{ id: "t1", content: "do" }] }), ctx({ mode: AgentMode.PLAN })));
    expect(p.query.case).toBe("createPlanRequestQuery");
    if (p.query.case !== "createPlanRequestQuery") return;
    expect(p.query.value.toolCallId).toBe("call-1");
    expect(p.query.value.args).toMatchObject({ name: "P", overview: "O", plan: "# Plan" });
    expect(p.query.value.args?.todos[0]).toMatchObject({ id: "t1", content: "do", status: TodoStatus.PENDING });
    expect(p.started.tool.case).toBe("createPlanToolCall");
  });

  it("SwitchMode → switch_mode_request_query", () => {
    const p = asInteraction(planToolCall(call("SwitchMode", { target_mode_id: "plan", explanation: "design first" }), ctx()));
    expect(p.query.case).toBe("switchModeRequestQuery");
    if (p.query.case === "switchModeRequestQuery") expect(p.query.value.args).toMatchObject({ targetModeId: "plan", explanation: "design first", toolCallId: "call-1" });
    expect(p.started.tool.case).toBe("switchModeToolCall");
  });

  it("WebSearch → web_search_request_query; WebFetch → web_fetch_request_query (approval first)", () => {
    const s = asInteraction(planToolCall(call("WebSearch", { search_term: "vitest" }), ctx()));
    expect(s.query.case).toBe("webSearchRequestQuery");
    if (s.query.case === "webSearchRequestQuery") expect(s.query.value.args).toMatchObject({ searchTerm: "vitest", toolCallId: "call-1" });
    expect(s.started.tool.case).toBe("webSearchToolCall");
    const f = asInteraction(planToolCall(call("WebFetch", { url: "https://example.com/x" }), ctx()));
    expect(f.query.case).toBe("webFetchRequestQuery");
    if (f.query.case === "webFetchRequestQuery") expect(f.query.value).toMatchObject({ skipApproval: false, args: { url: "https://example.com/x", toolCallId: "call-1" } });
    expect(f.started.tool.case).toBe("webFetchToolCall");
  });
});

describe("planToolCall: local and refused", () => {
  it("TodoWrite is resolved locally and returns the updated todos", () => {
    const existing = planToolCall(call("TodoWrite", { merge: false, todos: [{ id: "a", content: "A", status: "pending" }, { id: "b", content: "B", status: "pending" }] }), ctx({ nowMs: 1000 }));
    if (existing.kind !== "local") throw new Error(existing.kind);
    const todos = existing.outcome.effects?.todos ?? [];
    expect(todos.map((t) => [t.id, t.status])).toEqual([["a", TodoStatus.PENDING], ["b", TodoStatus.PENDING]]);
    const merged = planToolCall(call("TodoWrite", { merge: true, todos: [{ id: "b", content: "B", status: "in_progress" }, { id: "c", content: "C", status: "pending" }] }), ctx({ todos, nowMs: 2000 }));
    if (merged.kind !== "local") throw new Error(merged.kind);
    expect(merged.outcome.isError).toBe(false);
    expect(merged.outcome.effects?.todos?.map((t) => [t.id, t.status, t.createdAt])).toEqual([
      ["a", TodoStatus.PENDING, 1000n], ["b", TodoStatus.IN_PROGRESS, 1000n], ["c", TodoStatus.PENDING, 2000n],
    ]);
    expect(merged.outcome.modelText).toContain("[in_progress] b: B");
    expect(merged.outcome.completed.tool.case).toBe("updateTodosToolCall");
    if (merged.outcome.completed.tool.case === "updateTodosToolCall") expect(merged.outcome.completed.tool.value.result?.result.case).toBe("success");
  });

  it("unknown tool → refused, listing the available tools", () => {
    const text = refusedText(planToolCall(call("Frobnicate", {}), ctx({ mode: AgentMode.ASK })));
    expect(text).toContain('Unknown tool "Frobnicate"');
    expect(text).toContain("Read, Grep");
  });

  it("tool forbidden in the mode → refused with the mode named", () => {
    expect(refusedText(planToolCall(call("Write", { path: "a", contents: "" }), ctx({ mode: AgentMode.ASK })))).toContain("Write is not available in ask mode");
    expect(refusedText(planToolCall(call("Edit", { path: "a", old_string: "x", new_string: "y" }), ctx({ mode: AgentMode.PLAN })))).toContain("plan mode");
    expect(refusedText(planToolCall(call("SwitchMode", { target_mode_id: "ask" }), ctx({ mode: AgentMode.DEBUG })))).toContain("debug mode");
    expect(refusedText(planToolCall(call("AskQuestion", { questions: [] }), ctx({ isSubagent: true })))).toContain("subagent cannot ask");
    expect(refusedText(planToolCall(call("mcp__github__create_issue", { title: "x" }), ctx({ mode: AgentMode.ASK })))).toContain("Unknown tool");
  });

  it("invalid JSON and invalid arguments → refused with a message the model can act on", () => {
    expect(refusedText(planToolCall(call("Read", "{not json"), ctx()))).toContain("not a valid JSON object");
    expect(refusedText(planToolCall(call("Read", "[1]"), ctx()))).toContain("not a valid JSON object");
    expect(refusedText(planToolCall(call("Read", {}), ctx()))).toContain('missing required property "path"');
    expect(refusedText(planToolCall(call("Read", { path: "a", bogus: 1 }), ctx()))).toContain('unknown property "bogus"');
    expect(refusedText(planToolCall(call("Read", { path: "a", limit: "10" }), ctx()))).toContain("limit must be an integer");
    expect(refusedText(planToolCall(call("Grep", { pattern: "x", output_mode: "lines" }), ctx()))).toContain("output_mode must be one of");
    expect(refusedText(planToolCall(call("WebFetch", { url: "file:///etc/passwd" }), ctx()))).toContain("http");
    expect(refusedText(planToolCall(call("CallMcpTool", { server: "github", tool_name: "nope" }), ctx()))).toContain("github / create_issue");
  });

  it("null optionals are accepted as absent (strict-mode providers)", () => {
    const p = asExec(planToolCall(call("Read", { path: "a", offset: null, limit: null }), ctx()));
    if (p.exec.case === "readArgs") expect(p.exec.value.offset).toBeUndefined();
  });

  it("MCP tools without MCP servers → refused", () => {
    expect(refusedText(planToolCall(call("ListMcpResources", {}), ctx({ mcpTools: [] })))).toContain("No MCP servers");
  });

  it("web tools disabled by policy → local rejected outcome the model and user can read", () => {
    const p = planToolCall(call("WebSearch", { search_term: "x" }), ctx({ webSearchEnabled: false }));
    expect(p.kind).toBe("local");
    if (p.kind !== "local") return;
    expect(p.outcome.isError).toBe(true);
    expect(p.outcome.modelText).toContain("Web search is disabled by policy");
    expect(p.outcome.completed.tool.case).toBe("webSearchToolCall");
    if (p.outcome.completed.tool.case === "webSearchToolCall") expect(p.outcome.completed.tool.value.result?.result.case).toBe("rejected");
    const f = planToolCall(call("WebFetch", { url: "https://x.y" }), ctx({ webFetchEnabled: false }));
    expect(f.kind === "local" && f.outcome.modelText).toContain("Web fetch is disabled by policy");
  });
});
