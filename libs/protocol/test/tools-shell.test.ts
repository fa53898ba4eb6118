import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ShellAbortReason, ShellBackgroundReason, ShellStreamSchema, type ShellStream } from "@byok/wire";
import {
  MAX_SHELL_MODEL_CHARS, applyShellEvent, completeExec, failShell, planToolCall, startShell, type ShellAgg, type ShellStep,
} from "../src/index.js";
import { asExec, call, ctx } from "./tools-fixtures.js";

function ev(event: MessageInitShape<typeof ShellStreamSchema>["event"]): ShellStream {
  return create(ShellStreamSchema, { event });
}

function run(agg: ShellAgg, events: ShellStream[]): { agg: ShellAgg; steps: ShellStep[] } {
  const steps: ShellStep[] = [];
  for (const e of events) {
    const s = applyShellEvent(agg, e);
    steps.push(s);
    agg = s.agg;
  }
  return { agg, steps };
}

const shellPlan = () => asExec(planToolCall(call("Shell", { command: "npm test", working_directory: "/w" }), ctx()));

describe("shell stream aggregation", () => {
  it("start, stdout, stderr, exit 0 → live mirrors and a success outcome", () => {
    const { steps } = run(startShell(shellPlan(), "mc-1"), [
      ev({ case: "start", value: {} }),
      ev({ case: "stdout", value: { data: "ok 1\n" } }),
      ev({ case: "stderr", value: { data: "warn\n" } }),
      ev({ case: "stdout", value: { data: "ok 2\n" } }),
      ev({ case: "exit", value: { code: 0, cwd: "/w", localExecutionTimeMs: 1500 } }),
    ]);
    expect(steps[0]?.updates.map((u) => u.case)).toEqual(["shellOutputDelta"]);
    const out = steps[1]?.updates ?? [];
    expect(out.map((u) => u.case)).toEqual(["shellOutputDelta", "toolCallDelta"]);
    const delta = out[1];
    if (delta?.case !== "toolCallDelta") throw new Error("expected tool_call_delta");
    expect(delta.value).toMatchObject({ callId: "call-1", modelCallId: "mc-1" });
    expect(delta.value.toolCallDelta?.delta.case).toBe("shellToolCallDelta");
    if (delta.value.toolCallDelta?.delta.case === "shellToolCallDelta") {
      expect(delta.value.toolCallDelta.delta.value.delta).toMatchObject({ case: "stdout", value: { content: "ok 1\n" } });
    }
    expect(steps.slice(0, 4).every((s) => s.done === undefined)).toBe(true);
    const last = steps[4];
    expect(last?.updates.map((u) => u.case)).toEqual(["shellOutputDelta"]);
    const done = last?.done;
    if (!done) throw new Error("expected done");
    expect(done.isError).toBe(false);
    expect(done.modelText).toBe("Exit code: 0\n\nstdout:\nok 1\nok 2\n\nstderr:\nwarn");
    const t = done.completed.tool;
    if (t.case !== "shellToolCall" || t.value.result?.result.case !== "success") throw new Error("expected shell success");
    expect(t.value.args?.command).toBe("npm test");
    expect(t.value.result.result.value).toMatchObject({ exitCode: 0, stdout: "ok 1\nok 2\n", stderr: "warn\n", workingDirectory: "/w", executionTime: 1500 });
  });

  it("non-zero exit and abort", () => {
    const failed = run(startShell(shellPlan()), [ev({ case: "stderr", value: { data: "boom" } }), ev({ case: "exit", value: { code: 1 } })]);
    const d = failed.steps[1]?.done;
    expect(d?.modelText).toBe("Exit code: 1\n\nstderr:\nboom");
    expect(d?.completed.tool.case === "shellToolCall" && d.completed.tool.value.result?.result.case).toBe("failure");
    const aborted = run(startShell(shellPlan()), [ev({ case: "exit", value: { code: 130, aborted: true, abortReason: ShellAbortReason.USER_ABORT } })]);
    expect(aborted.steps[0]?.done).toMatchObject({ isError: true });
  });

  it("backgrounded ends the wait and tells the model the shell id", () => {
    const { steps, agg } = run(startShell(shellPlan()), [
      ev({ case: "start", value: {} }),
      ev({ case: "stdout", value: { data: "listening on :3000\n" } }),
      ev({ case: "backgrounded", value: { shellId: 9, command: "npm test", workingDirectory: "/w", pid: 4242, reason: ShellBackgroundReason.TIMEOUT } }),
      ev({ case: "stdout", value: { data: "late" } }),
    ]);
    const done = steps[2]?.done;
    expect(done?.isError).toBe(false);
    expect(done?.modelText).toContain("still running in the background as shell 9 (pid 4242)");
    expect(done?.modelText).toContain("AwaitShell with shell_id 9");
    expect(done?.modelText).toContain("listening on :3000");
    const t = done?.completed.tool;
    if (t?.case !== "shellToolCall" || t.value.result?.result.case !== "success") throw new Error("expected success");
    expect(t.value.result.isBackground).toBe(true);
    expect(t.value.result.result.value).toMatchObject({ shellId: 9, pid: 4242 });
    // Events after the end are ignored.
    expect(steps[3]).toEqual({ agg, updates: [] });
  });

  it("rejected and permission denied end with a tool error", () => {
    const r = run(startShell(shellPlan()), [ev({ case: "rejected", value: { command: "npm test", reason: "not now" } })]);
    expect(r.steps[0]?.done?.isError).toBe(true);
    expect(r.steps[0]?.done?.modelText).toContain("rejected the command `npm test`: not now");
    const pd = run(startShell(shellPlan()), [ev({ case: "permissionDenied", value: { command: "npm test", error: "sandbox", isReadonly: true } })]);
    expect(pd.steps[0]?.done?.modelText).toContain("Permission denied running the command: sandbox (the workspace is read-only)");
    expect(pd.steps[0]?.done?.completed.tool.case === "shellToolCall" && pd.steps[0].done.completed.tool.value.result?.result.case).toBe("permissionDenied");
  });

  it("the stdin flow: a background shell, WriteShellStdin, then exit", () => {
    const started = run(startShell(shellPlan()), [
      ev({ case: "stdout", value: { data: "Proceed? [y/N] " } }),
      ev({ case: "backgrounded", value: { shellId: 3, pid: 7 } }),
    ]);
    expect(started.steps[1]?.done?.modelText).toContain("WriteShellStdin");
    const stdin = asExec(planToolCall(call("WriteShellStdin", { shell_id: 3, chars: "y\n" }, "call-2"), ctx()));
    expect(stdin.exec).toMatchObject({ case: "writeShellStdinArgs", value: { shellId: 3, chars: "y\n" } });
    const o = completeExec(stdin, { case: "writeShellStdinResult", value: { $typeName: "agent.v1.WriteShellStdinResult", result: { case: "success", value: { $typeName: "agent.v1.WriteShellStdinSuccess", shellId: 3, terminalFileLengthBeforeInputWritten: 15 } } } });
    expect(o).toMatchObject({ isError: false });
    expect(o.completed.toolCallId).toBe("call-2");
  });

  it("huge output is bounded in memory and for the model (head and tail kept)", () => {
    let agg = startShell(shellPlan());
    const chunk = "y".repeat(10_000);
    agg = applyShellEvent(agg, ev({ case: "stdout", value: { data: "FIRST LINE\n" } })).agg;
    for (let i = 0; i < 100; i++) agg = applyShellEvent(agg, ev({ case: "stdout", value: { data: chunk } })).agg;
    agg = applyShellEvent(agg, ev({ case: "stdout", value: { data: "\nLAST LINE" } })).agg;
    const done = applyShellEvent(agg, ev({ case: "exit", value: { code: 0 } })).done;
    expect(done?.modelText.length).toBeLessThan(MAX_SHELL_MODEL_CHARS + 500);
    expect(done?.modelText).toContain("FIRST LINE");
    expect(done?.modelText).toContain("LAST LINE");
    expect(done?.modelText).toContain("characters omitted");
  });

  it("failShell: a stream that stops without a terminal event", () => {
    const { agg } = run(startShell(shellPlan()), [ev({ case: "stdout", value: { data: "partial" } })]);
    const s = failShell(agg, "The shell stream closed without an exit status.");
    expect(s.done?.isError).toBe(true);
    expect(s.done?.modelText).toBe("The shell stream closed without an exit status.\n\nOutput before it stopped:\nstdout:\npartial");
    expect(failShell(s.agg, "again").done).toBeUndefined();
  });
});
