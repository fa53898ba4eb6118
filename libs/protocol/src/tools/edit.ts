import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  EditArgsSchema, EditToolCallSchema, ReadArgsSchema, WriteArgsSchema, type EditResultSchema, type ReadResult, type WriteResult,
} from "@byok/wire";
import { applyReplace, lineDiff } from "./edit-apply.js";
import { MAX_LIST_ENTRIES, capUi, truncateHead } from "./limits.js";
import { outcome, toolCall } from "./outcome.js";
import type { EditToolInput } from "./specs.js";
import type { EditPlan, EditState, ExecRequest, ExecResult, ToolOutcome } from "./types.js";

/**
 * The string-replace Edit as a pure sub-machine (docs/protocol.md "Bridges": read → apply →
 * `write_args` → read back):
 *
 *   reading ──read ok, applied──▶ writing ──write ok──▶ reading_back ──read──▶ done
 *      │ not found / not unique / read error        │ write error            (read-back failure still
 *      ▼                                            ▼                         ends `done`, success)
 *     done (tool error)                            done (tool error)
 *
 * `write_args.return_file_content_after_write` is set; when the client returns the content
 * with the write, the read-back is skipped. A path that does not exist with an empty
 * `old_string` creates the file with `new_string`. Every `done` outcome carries an
 * `edit_tool_call` with the matching `EditResult` branch.
 */
export type EditStep = { kind: "exec"; state: EditState; exec: ExecRequest } | { kind: "done"; outcome: ToolOutcome };

function readExec(s: EditState): ExecRequest {
  return { case: "readArgs", value: create(ReadArgsSchema, { path: s.input.path, toolCallId: s.callId }) };
}

function editArgs(s: EditState) {
  return create(EditArgsSchema, { path: s.input.path });
}

type EditResultInit = MessageInitShape<typeof EditResultSchema>["result"];

function finish(s: EditState, result: EditResultInit, modelText: string, isError: boolean): EditStep {
  const completed = toolCall(s.callId, {
    case: "editToolCall",
    value: create(EditToolCallSchema, { args: editArgs(s), result: { result } }),
  });
  return { kind: "done", outcome: outcome(modelText, isError, completed) };
}

function fail(s: EditState, message: string): EditStep {
  return finish(s, { case: "error", value: { path: s.input.path, error: message, modelVisibleError: message } }, message, true);
}

/** Starts an edit: the first exec reads the whole file. */
export function startEdit(callId: string, toolName: string, input: EditToolInput): EditPlan {
  const state: EditState = { callId, toolName, input, phase: "reading", before: "", after: "", count: 0, creating: false };
  return {
    kind: "edit", callId, toolName, state, exec: readExec(state),
    started: toolCall(callId, { case: "editToolCall", value: create(EditToolCallSchema, { args: editArgs(state) }) }),
  };
}

/** Advances the edit with the client's answer to the last exec. A result of the wrong branch ends it with a tool error. */
export function continueEdit(state: EditState, result: ExecResult): EditStep {
  switch (state.phase) {
    case "reading":
      if (result.case !== "readResult" && result.case !== "redactedReadResult") return fail(state, unexpected(result.case, "read_result"));
      return onRead(state, result.value.result);
    case "writing":
      if (result.case !== "writeResult") return fail(state, unexpected(result.case, "write_result"));
      return onWrite(state, result.value.result);
    case "reading_back":
      if (result.case !== "readResult" && result.case !== "redactedReadResult") return fail(state, unexpected(result.case, "read_result"));
      return onReadBack(state, result.value.result);
  }
}

function unexpected(got: string | undefined, want: string): string {
  return `Internal error: the client answered the edit with ${got ?? "an empty result"} instead of ${want}. The file may not have been changed; read it before retrying.`;
}

function onRead(s: EditState, r: ReadResult["result"]): EditStep {
  const { path, old_string: oldString, new_string: newString, replace_all: replaceAll } = s.input;
  switch (r.case) {
    case "success": {
      if (r.value.output.case !== "content") return fail(s, `${path} is not a text file; Edit only works on text files.`);
      if (r.value.truncated) return fail(s, `${path} is too large to edit safely (the client returned a truncated read). Use Write for a full rewrite, or Shell.`);
      const content = r.value.output.value;
      if (oldString === "") {
        if (content.length > 0) return fail(s, `old_string is empty but ${path} already exists and is not empty. Give the exact text to replace, or use Write to overwrite the file.`);
        return write({ ...s, before: content, after: newString, count: 1 });
      }
      const applied = applyReplace(content, oldString, newString, replaceAll ?? false);
      if (!applied.ok) {
        if (applied.reason === "no_change") return fail(s, "old_string and new_string are identical; nothing to change.");
        if (applied.reason === "not_found") {
          return fail(s, `old_string was not found in ${path}. It must match the current file exactly, including whitespace and indentation, without line-number prefixes. Read the file again and copy the exact text.`);
        }
        return fail(s, `old_string occurs ${applied.count} times in ${path}; it must be unique. Include more surrounding lines to identify one occurrence, or set replace_all to true to replace all ${applied.count}.`);
      }
      return write({ ...s, before: content, after: applied.content, count: applied.count });
    }
    case "fileNotFound":
      if (oldString === "") return write({ ...s, before: "", after: newString, count: 1, creating: true });
      return finish(s, { case: "fileNotFound", value: { path } }, `File not found: ${path}. To create a file, use Write (or Edit with an empty old_string).`, true);
    case "permissionDenied":
      return finish(s, { case: "readPermissionDenied", value: { path } }, `Permission denied reading ${path}.`, true);
    case "rejected":
      return finish(s, { case: "rejected", value: { path, reason: r.value.reason } }, `The user rejected reading ${path}${r.value.reason ? `: ${r.value.reason}` : "."}`, true);
    case "invalidFile":
      return fail(s, `${path} cannot be edited: ${r.value.reason || "invalid file"}.`);
    case "error":
      return fail(s, `Could not read ${path}: ${r.value.error}`);
    case undefined:
      return fail(s, `The client returned an empty read result for ${path}.`);
  }
}

function write(s: EditState): EditStep {
  const next: EditState = { ...s, phase: "writing" };
  return {
    kind: "exec",
    state: next,
    exec: {
      case: "writeArgs",
      value: create(WriteArgsSchema, { path: s.input.path, fileText: s.after, toolCallId: s.callId, returnFileContentAfterWrite: true }),
    },
  };
}

function onWrite(s: EditState, r: WriteResult["result"]): EditStep {
  const path = s.input.path;
  switch (r.case) {
    case "success":
      if (r.value.fileContentAfterWrite !== undefined) return succeed(s, r.value.fileContentAfterWrite);
      return { kind: "exec", state: { ...s, phase: "reading_back" }, exec: readExec(s) };
    case "permissionDenied":
      return finish(s, { case: "writePermissionDenied", value: { path, error: r.value.error, isReadonly: r.value.isReadonly } },
        `Permission denied writing ${path}${r.value.error ? `: ${r.value.error}` : "."}`, true);
    case "rejected":
      return finish(s, { case: "rejected", value: { path, reason: r.value.reason } }, `The user rejected the edit of ${path}${r.value.reason ? `: ${r.value.reason}` : "."}`, true);
    case "noSpace":
      return fail(s, `No space left on the device writing ${path}.`);
    case "error":
      return fail(s, `Could not write ${path}: ${r.value.error}`);
    case undefined:
      return fail(s, `The client returned an empty write result for ${path}.`);
  }
}

/** The read-back only refines the "after" content; a failed read-back does not undo a successful write. */
function onReadBack(s: EditState, r: ReadResult["result"]): EditStep {
  const after = r.case === "success" && r.value.output.case === "content" && !r.value.truncated ? r.value.output.value : s.after;
  return succeed(s, after);
}

/** Lines of context shown to the model around the change. */
const SNIPPET_CONTEXT_LINES = 3;

function succeed(s: EditState, after: string): EditStep {
  const path = s.input.path;
  const d = lineDiff(s.before, after, path);
  const lines = after.split(/\r?\n/);
  const from = Math.max(1, d.firstChangedLine - SNIPPET_CONTEXT_LINES);
  const to = Math.min(lines.length, d.firstChangedLine + d.linesAdded + SNIPPET_CONTEXT_LINES - 1);
  const snippet = lines.slice(from - 1, Math.min(to, from - 1 + MAX_LIST_ENTRIES)).map((l, i) => `${from + i}|${l}`).join("\n");
  const what = s.creating ? `Created ${path}` : `Edited ${path}: replaced ${s.count} occurrence${s.count === 1 ? "" : "s"}`;
  const text = `${what} (+${d.linesAdded} -${d.linesRemoved} lines).${snippet ? `\nThe changed region now reads:\n${truncateHead(snippet, 4_000)}` : ""}`;
  return finish(s, {
    case: "success",
    value: {
      path,
      linesAdded: d.linesAdded,
      linesRemoved: d.linesRemoved,
      diffString: capUi(d.diff),
      beforeFullFileContent: capUi(s.before),
      afterFullFileContent: capUi(after),
    },
  }, text, false);
}
