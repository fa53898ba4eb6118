import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ExecClientMessageSchema } from "@byok/wire";
import { continueEdit, planToolCall, type EditPlan, type EditStep, type ExecResult, type ToolOutcome } from "../src/index.js";
import { call, ctx } from "./tools-fixtures.js";

type ResultInit = MessageInitShape<typeof ExecClientMessageSchema>["message"];
const result = (message: ResultInit): ExecResult => create(ExecClientMessageSchema, { message }).message;
const readOk = (content: string): ExecResult =>
  result({ case: "readResult", value: { result: { case: "success", value: { path: "a.ts", output: { case: "content", value: content } } } } });
const writeOk = (after?: string): ExecResult =>
  result({ case: "writeResult", value: { result: { case: "success", value: { path: "a.ts", fileContentAfterWrite: after } } } });

function edit(args: unknown): EditPlan {
  const p = planToolCall(call("Edit", args), ctx());
  if (p.kind !== "edit") throw new Error(p.kind);
  return p;
}

function done(step: EditStep): ToolOutcome {
  if (step.kind !== "done") throw new Error(`expected done, got exec ${step.exec.case}`);
  return step.outcome;
}

function editResult(o: ToolOutcome) {
  const t = o.completed.tool;
  if (t.case !== "editToolCall") throw new Error(t.case);
  return t.value.result?.result;
}

describe("Edit: read → apply → write → read back", () => {
  it("happy path with read-back", () => {
    const p = edit({ path: "a.ts", old_string: "const a = 1;", new_string: "const a = 2;\nconst b = 3;" });
    const s1 = continueEdit(p.state, readOk("// head\nconst a = 1;\n// tail\n"));
    if (s1.kind !== "exec") throw new Error("expected write");
    expect(s1.exec.case).toBe("writeArgs");
    if (s1.exec.case === "writeArgs") {
      expect(s1.exec.value).toMatchObject({ path: "a.ts", toolCallId: "call-1", fileText: "// head\nconst a = 2;\nconst b = 3;\n// tail\n", returnFileContentAfterWrite: true });
    }
    const s2 = continueEdit(s1.state, writeOk());
    if (s2.kind !== "exec") throw new Error("expected read back");
    expect(s2.exec.case).toBe("readArgs");
    const o = done(continueEdit(s2.state, readOk("// head\nconst a = 2;\nconst b = 3;\n// tail\n")));
    expect(o.isError).toBe(false);
    expect(o.modelText).toContain("Edited a.ts: replaced 1 occurrence (+2 -1 lines).");
    expect(o.modelText).toContain("2|const a = 2;\n3|const b = 3;");
    const r = editResult(o);
    if (r?.case !== "success") throw new Error("expected success");
    expect(r.value).toMatchObject({
      path: "a.ts", linesAdded: 2, linesRemoved: 1,
      beforeFullFileContent: "// head\nconst a = 1;\n// tail\n", afterFullFileContent: "// head\nconst a = 2;\nconst b = 3;\n// tail\n",
    });
    expect(r.value.diffString).toContain("@@ -2,1 +2,2 @@\n-const a = 1;\n+const a = 2;\n+const b = 3;");
  });

  it("content returned with the write skips the read-back", () => {
    const p = edit({ path: "a.ts", old_string: "x", new_string: "y" });
    const s1 = continueEdit(p.state, readOk("x\n"));
    if (s1.kind !== "exec") throw new Error("expected write");
    expect(done(continueEdit(s1.state, writeOk("y\n"))).isError).toBe(false);
  });

  it("old_string not found → tool error the model can act on", () => {
    const o = done(continueEdit(edit({ path: "a.ts", old_string: "nope", new_string: "x" }).state, readOk("abc\n")));
    expect(o.isError).toBe(true);
    expect(o.modelText).toContain("old_string was not found in a.ts");
    expect(editResult(o)?.case).toBe("error");
  });

  it("old_string not unique → tool error; replace_all replaces every occurrence", () => {
    const o = done(continueEdit(edit({ path: "a.ts", old_string: "foo", new_string: "bar" }).state, readOk("foo\nfoo\nfoo\n")));
    expect(o.isError).toBe(true);
    expect(o.modelText).toContain("occurs 3 times");
    const all = continueEdit(edit({ path: "a.ts", old_string: "foo", new_string: "bar", replace_all: true }).state, readOk("foo\nfoo\nfoo\n"));
    if (all.kind !== "exec" || all.exec.case !== "writeArgs") throw new Error("expected write");
    expect(all.exec.value.fileText).toBe("bar\nbar\nbar\n");
    expect(done(continueEdit(all.state, writeOk("bar\nbar\nbar\n"))).modelText).toContain("replaced 3 occurrences");
  });

  it("replacement text with $ patterns is inserted literally; CRLF files match LF old_string", () => {
    const s = continueEdit(edit({ path: "a.ts", old_string: "a\nb", new_string: "$&$1\nc" }).state, readOk("a\r\nb\r\n"));
    if (s.kind !== "exec" || s.exec.case !== "writeArgs") throw new Error("expected write");
    expect(s.exec.value.fileText).toBe("$&$1\r\nc\r\n");
  });

  it("file not found: an error, unless old_string is empty (create)", () => {
    const nf = result({ case: "readResult", value: { result: { case: "fileNotFound", value: { path: "a.ts" } } } });
    const o = done(continueEdit(edit({ path: "a.ts", old_string: "x", new_string: "y" }).state, nf));
    expect(o.isError).toBe(true);
    expect(editResult(o)?.case).toBe("fileNotFound");
    const create_ = continueEdit(edit({ path: "a.ts", old_string: "", new_string: "new file\n" }).state, nf);
    if (create_.kind !== "exec" || create_.exec.case !== "writeArgs") throw new Error("expected write");
    expect(create_.exec.value.fileText).toBe("new file\n");
    expect(done(continueEdit(create_.state, writeOk("new file\n"))).modelText).toContain("Created a.ts (+1 -0 lines)");
  });

  it("write errors and wrong result branches end with tool errors", () => {
    const p = edit({ path: "a.ts", old_string: "x", new_string: "y" });
    const s1 = continueEdit(p.state, readOk("x"));
    if (s1.kind !== "exec") throw new Error("expected write");
    const denied = done(continueEdit(s1.state, result({ case: "writeResult", value: { result: { case: "permissionDenied", value: { path: "a.ts", error: "EACCES" } } } })));
    expect(denied.isError).toBe(true);
    expect(editResult(denied)?.case).toBe("writePermissionDenied");
    const wrong = done(continueEdit(p.state, result({ case: "lsResult", value: {} })));
    expect(wrong.isError).toBe(true);
    expect(wrong.modelText).toContain("lsResult instead of read_result");
  });

  it("identical strings are refused", () => {
    expect(done(continueEdit(edit({ path: "a.ts", old_string: "x", new_string: "x" }).state, readOk("x"))).modelText).toContain("identical");
  });
});
