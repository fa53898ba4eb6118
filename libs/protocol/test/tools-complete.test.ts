import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  DiagnosticSeverity, ExecClientMessageSchema, ForceBackgroundShellStatus, SubagentBackgroundReason,
} from "@byok/wire";
import {
  MAX_MODEL_TEXT_CHARS, completeAwaitShell, completeExec, planToolCall, toolErrorOutcome, type ExecPlan, type ExecResult, type ToolOutcome,
} from "../src/index.js";
import { asExec, call, ctx } from "./tools-fixtures.js";

type ResultInit = MessageInitShape<typeof ExecClientMessageSchema>["message"];

/** Builds the `exec_client_message.message` the client would send. */
function result(message: ResultInit): ExecResult {
  return create(ExecClientMessageSchema, { id: 1, execId: "e1", message }).message;
}

function plan(name: string, args: unknown): ExecPlan {
  return asExec(planToolCall(call(name, args), ctx()));
}

function variant(o: ToolOutcome) {
  expect(o.completed.toolCallId).toBe("call-1");
  return o.completed.tool;
}

describe("completeExec: Read", () => {
  const p = plan("Read", { path: "a.ts" });

  it("success → numbered lines + read_tool_call success", () => {
    const o = completeExec(p, result({ case: "readResult", value: { result: { case: "success", value: { path: "a.ts", totalLines: 3, fileSize: 12n, output: { case: "content", value: "one\ntwo\nthree\n" } } } } }));
    expect(o.isError).toBe(false);
    expect(o.modelText).toBe("1|one\n2|two\n3|three");
    const t = variant(o);
    expect(t.case).toBe("readToolCall");
    if (t.case !== "readToolCall") return;
    expect(t.value.args?.path).toBe("a.ts");
    expect(t.value.result?.result.case).toBe("success");
    if (t.value.result?.result.case === "success") {
      expect(t.value.result.result.value).toMatchObject({ path: "a.ts", totalLines: 3, fileSize: 12, isEmpty: false, readRange: { startLine: 1, endLine: 3 } });
      expect(t.value.result.result.value.output).toEqual({ case: "content", value: "one\ntwo\nthree\n" });
    }
  });

  it("a range the client did not apply is applied here; numbering follows the offset", () => {
    const ranged = plan("Read", { path: "a.ts", offset: 2, limit: 1 });
    const o = completeExec(ranged, result({ case: "readResult", value: { result: { case: "success", value: { path: "a.ts", totalLines: 3, output: { case: "content", value: "one\ntwo\nthree" } } } } }));
    expect(o.modelText).toBe("2|two\n[Showing lines 2-2 of 3.]");
  });

  it("a huge file is cut at a line boundary with a note telling how to continue", () => {
    const content = Array.from({ length: 20_000 }, (_, i) => `line ${i} ${"x".repeat(40)}`).join("\n");
    const o = completeExec(p, result({ case: "readResult", value: { result: { case: "success", value: { path: "a.ts", totalLines: 20_000, output: { case: "content", value: content } } } } }));
    expect(o.modelText.length).toBeLessThanOrEqual(MAX_MODEL_TEXT_CHARS);
    expect(o.modelText).toMatch(/\[Output truncated at line (\d+) of 20000\. Call Read with offset=\d+ to continue\.\]$/);
  });

  it("error branches → tool errors with read_tool_call error", () => {
    const cases: [ResultInit, string][] = [
      [{ case: "readResult", value: { result: { case: "fileNotFound", value: { path: "a.ts" } } } }, "File not found: a.ts"],
      [{ case: "readResult", value: { result: { case: "permissionDenied", value: { path: "a.ts" } } } }, "Permission denied"],
      [{ case: "readResult", value: { result: { case: "rejected", value: { path: "a.ts", reason: "private" } } } }, "rejected reading a.ts: private"],
      [{ case: "readResult", value: { result: { case: "invalidFile", value: { path: "a.ts", reason: "is a directory" } } } }, "is a directory"],
      [{ case: "readResult", value: { result: { case: "error", value: { path: "a.ts", error: "EIO" } } } }, "EIO"],
    ];
    for (const [r, text] of cases) {
      const o = completeExec(p, result(r));
      expect(o.isError).toBe(true);
      expect(o.modelText).toContain(text);
      const t = variant(o);
      expect(t.case === "readToolCall" && t.value.result?.result.case).toBe("error");
    }
  });

  it("a binary file is described, not dumped", () => {
    const o = completeExec(p, result({ case: "readResult", value: { result: { case: "success", value: { path: "a.png", fileSize: 3n, output: { case: "data", value: new Uint8Array([1, 2, 3]) } } } } }));
    expect(o.modelText).toContain("binary file (3 bytes)");
  });
});

describe("completeExec: other result kinds", () => {
  it("Write → edit_tool_call success / rejected", () => {
    const p = plan("Write", { path: "b.txt", contents: "a\nb\n" });
    const ok = completeExec(p, result({ case: "writeResult", value: { result: { case: "success", value: { path: "b.txt", linesCreated: 2, fileSize: 4 } } } }));
    expect(ok).toMatchObject({ isError: false, modelText: "Wrote b.txt (2 lines)." });
    const t = variant(ok);
    if (t.case === "editToolCall" && t.value.result?.result.case === "success") expect(t.value.result.result.value).toMatchObject({ path: "b.txt", afterFullFileContent: "a\nb\n", linesAdded: 2 });
    else throw new Error("expected edit success");
    const no = completeExec(p, result({ case: "writeResult", value: { result: { case: "rejected", value: { path: "b.txt", reason: "no" } } } }));
    expect(no.isError).toBe(true);
    const n = variant(no);
    expect(n.case === "editToolCall" && n.value.result?.result.case).toBe("rejected");
  });

  it("Delete → delete_tool_call; not-a-file is an error", () => {
    const p = plan("Delete", { path: "d" });
    expect(completeExec(p, result({ case: "deleteResult", value: { result: { case: "success", value: { path: "d" } } } }))).toMatchObject({ isError: false, modelText: "Deleted d." });
    const o = completeExec(p, result({ case: "deleteResult", value: { result: { case: "notFile", value: { path: "d", actualType: "directory" } } } }));
    expect(o.isError).toBe(true);
    expect(variant(o).case).toBe("deleteToolCall");
  });

  it("Grep content / count / error", () => {
    const p = plan("Grep", { pattern: "foo" });
    const o = completeExec(p, result({
      case: "grepResult",
      value: { result: { case: "success", value: { pattern: "foo", workspaceResults: { "/w": { result: { case: "content", value: {
        matches: [{ file: "a.ts", matches: [{ lineNumber: 3, content: "const foo = 1;" }, { lineNumber: 4, content: "ctx", isContextLine: true }] }],
        totalMatchedLines: 1,
      } } } } } } },
    }));
    expect(o.modelText).toBe("a.ts:3:const foo = 1;\na.ts-4-ctx");
    expect(variant(o).case).toBe("grepToolCall");
    const none = completeExec(p, result({ case: "grepResult", value: { result: { case: "success", value: { pattern: "foo", workspaceResults: {} } } } }));
    expect(none.modelText).toBe('No matches for "foo".');
    const err = completeExec(p, result({ case: "grepResult", value: { result: { case: "error", value: { error: "bad regex" } } } }));
    expect(err).toMatchObject({ isError: true, modelText: "Grep failed: bad regex" });
  });

  it("Glob renders the grep files as glob_tool_call", () => {
    const p = plan("Glob", { glob_pattern: "**/*.ts" });
    const o = completeExec(p, result({
      case: "grepResult",
      value: { result: { case: "success", value: { workspaceResults: { "/w": { result: { case: "files", value: { files: ["a.ts", "b/c.ts"], totalFiles: 2 } } } } } } },
    }));
    expect(o.modelText).toBe("a.ts\nb/c.ts");
    const t = variant(o);
    if (t.case !== "globToolCall" || t.value.result?.result.case !== "success") throw new Error("expected glob success");
    expect(t.value.result.result.value).toMatchObject({ pattern: "**/*.ts", files: ["a.ts", "b/c.ts"], totalFiles: 2 });
  });

  it("long lists are capped with a note", () => {
    const p = plan("Glob", { glob_pattern: "*" });
    const files = Array.from({ length: 700 }, (_, i) => `f${i}`);
    const o = completeExec(p, result({ case: "grepResult", value: { result: { case: "success", value: { workspaceResults: { w: { result: { case: "files", value: { files } } } } } } } }));
    expect(o.modelText).toContain("[... 200 more files not shown.");
  });

  it("Ls → tree + ls_tool_call", () => {
    const p = plan("Ls", { path: "/w" });
    const o = completeExec(p, result({
      case: "lsResult",
      value: { result: { case: "success", value: { directoryTreeRoot: {
        absPath: "/w", childrenWereProcessed: true,
        childrenDirs: [{ absPath: "/w/src", childrenWereProcessed: true, childrenFiles: [{ name: "a.ts" }] }, { absPath: "/w/node_modules", childrenWereProcessed: false, numFiles: 900 }],
        childrenFiles: [{ name: "package.json" }],
      } } } },
    }));
    expect(o.modelText).toBe("/w/\nsrc/\n  a.ts\nnode_modules/ (900 files, not expanded)\npackage.json");
    expect(variant(o).case).toBe("lsToolCall");
  });

  it("ReadLints → diagnostics text + read_lints_tool_call", () => {
    const p = plan("ReadLints", { path: "a.ts" });
    const o = completeExec(p, result({
      case: "diagnosticsResult",
      value: { result: { case: "success", value: { path: "a.ts", totalDiagnostics: 1, diagnostics: [{
        severity: DiagnosticSeverity.ERROR, message: "x is not defined", source: "ts", code: "2304", range: { start: { line: 4, column: 2 }, end: { line: 4, column: 3 } },
      }] } } },
    }));
    expect(o.modelText).toBe("1 diagnostic in a.ts:\na.ts:4:2 error: x is not defined [ts 2304]");
    const t = variant(o);
    if (t.case !== "readLintsToolCall" || t.value.result?.result.case !== "success") throw new Error("expected lints success");
    expect(t.value.result.result.value.fileDiagnostics[0]?.diagnostics[0]?.message).toBe("x is not defined");
    const nf = completeExec(p, result({ case: "diagnosticsResult", value: { result: { case: "fileNotFound", value: { path: "a.ts" } } } }));
    expect(nf.isError).toBe(true);
  });

  it("MCP success / is_error / tool not found", () => {
    const p = plan("CallMcpTool", { server: "github", tool_name: "create_issue", arguments: { title: "t" } });
    const ok = completeExec(p, result({ case: "mcpResult", value: { result: { case: "success", value: { content: [{ content: { case: "text", value: { text: "issue #5" } } }] } } } }));
    expect(ok).toMatchObject({ isError: false, modelText: "issue #5" });
    expect(variant(ok).case).toBe("mcpToolCall");
    const isErr = completeExec(p, result({ case: "mcpResult", value: { result: { case: "success", value: { isError: true, content: [{ content: { case: "text", value: { text: "bad" } } }] } } } }));
    expect(isErr.isError).toBe(true);
    const nf = completeExec(p, result({ case: "mcpResult", value: { result: { case: "toolNotFound", value: { name: "create_issue", availableTools: ["list"] } } } }));
    expect(nf.modelText).toContain("Available: list");
  });

  it("MCP resources: list and read", () => {
    const l = completeExec(plan("ListMcpResources", {}), result({
      case: "listMcpResourcesExecResult", value: { result: { case: "success", value: { resources: [{ uri: "docs://a", server: "docs", name: "A" }] } } },
    }));
    expect(l.modelText).toBe("- docs: docs://a (A)");
    expect(variant(l).case).toBe("listMcpResourcesToolCall");
    const r = completeExec(plan("FetchMcpResource", { server: "docs", uri: "docs://a" }), result({
      case: "readMcpResourceExecResult", value: { result: { case: "success", value: { uri: "docs://a", content: { case: "text", value: "hello" } } } },
    }));
    expect(r.modelText).toBe("hello");
    expect(variant(r).case).toBe("readMcpResourceToolCall");
  });

  it("Task → final message + task_tool_call; background; error", () => {
    const p = plan("Task", { description: "d", prompt: "p" });
    const ok = completeExec(p, result({ case: "subagentResult", value: { result: { case: "success", value: { agentId: "ag1", finalMessage: "Found it in x.ts", toolCallCount: 4 } } } }));
    expect(ok.modelText).toContain("Found it in x.ts");
    const t = variant(ok);
    expect(t.case === "taskToolCall" && t.value.result?.result.case).toBe("success");
    const bg = completeExec(p, result({ case: "subagentResult", value: { result: { case: "success", value: { agentId: "ag2", backgroundReason: SubagentBackgroundReason.USER_REQUEST } } } }));
    expect(bg.modelText).toContain("continues in the background (agent id ag2)");
    const err = completeExec(p, result({ case: "subagentResult", value: { result: { case: "error", value: { error: "boom" } } } }));
    expect(err).toMatchObject({ isError: true, modelText: "The subagent failed: boom" });
  });

  it("WriteShellStdin and ForceBackgroundShell", () => {
    const w = completeExec(plan("WriteShellStdin", { shell_id: 2, chars: "y\n" }), result({ case: "writeShellStdinResult", value: { result: { case: "success", value: { shellId: 2 } } } }));
    expect(w.modelText).toContain("Wrote 2 characters to shell 2");
    expect(variant(w).case).toBe("writeShellStdinToolCall");
    const f = completeExec(plan("ForceBackgroundShell", { tool_call_id: "c0" }), result({ case: "forceBackgroundShellResult", value: { status: ForceBackgroundShellStatus.NOT_FOUND } }));
    expect(f.isError).toBe(true);
  });

  it("one-shot shell_result for a Shell plan", () => {
    const p = plan("Shell", { command: "ls" });
    const o = completeExec(p, result({ case: "shellResult", value: { result: { case: "failure", value: { command: "ls", exitCode: 2, stderr: "no such dir" } } } }));
    expect(o.modelText).toBe("Exit code: 2\n\nstderr:\nno such dir");
    expect(o.isError).toBe(false);
    const t = variant(o);
    expect(t.case === "shellToolCall" && t.value.result?.result.case).toBe("failure");
  });

  it("a result branch that does not match the exec branch → tool error", () => {
    const p = plan("Read", { path: "a" });
    const o = completeExec(p, result({ case: "writeResult", value: { result: { case: "success", value: { path: "a" } } } }));
    expect(o.isError).toBe(true);
    expect(o.modelText).toContain("answered Read with writeResult instead of readResult");
    const t = variant(o);
    expect(t.case === "readToolCall" && t.value.result?.result.case).toBe("error");
  });

  it("toolErrorOutcome keeps the started variant and sets its error branch", () => {
    const o = toolErrorOutcome(plan("Shell", { command: "sleep 999" }), "The client did not answer within 600 s.");
    expect(o).toMatchObject({ isError: true, modelText: "The client did not answer within 600 s." });
    const t = variant(o);
    if (t.case !== "shellToolCall") throw new Error(t.case);
    expect(t.value.args?.command).toBe("sleep 999");
    expect(t.value.result?.result.case).toBe("spawnError");
  });
});

describe("completeAwaitShell", () => {
  const p = planToolCall(call("AwaitShell", { shell_id: 4, block_until_ms: 500 }), ctx());
  if (p.kind !== "await_shell") throw new Error(p.kind);

  it("completed / still running / error → await_tool_call branches", () => {
    const done = completeAwaitShell(p, { kind: "completed", exitCode: 0, runtimeMs: 1200, output: "ok" });
    expect(done.modelText).toBe("Shell 4 finished with exit code 0.\n\nRecent output:\nok");
    const t = variant(done);
    expect(t.case === "awaitToolCall" && t.value.result?.result.case).toBe("complete");
    const running = completeAwaitShell(p, { kind: "still_running", runtimeMs: 500 });
    expect(running.modelText).toBe("Shell 4 is still running (waited 500 ms).");
    const err = completeAwaitShell(p, { kind: "error", message: "no such shell" });
    expect(err).toMatchObject({ isError: true, modelText: "Cannot await shell 4: no such shell" });
  });
});
