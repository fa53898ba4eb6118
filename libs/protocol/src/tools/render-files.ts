import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  DeleteToolCallSchema, EditToolCallSchema, ReadToolCallSchema, type DeleteResult, type ReadResult, type WriteResult,
} from "@byok/wire";
import { MAX_MODEL_TEXT_CHARS, capLine, capUi } from "./limits.js";
import { outcome, toolCall } from "./outcome.js";
import type { ExecPlan, ToolOutcome } from "./types.js";

/** Completion of Read, Write and Delete: model text + `read_tool_call` / `edit_tool_call` / `delete_tool_call`. */

/** Budget of the numbered file text in a Read result (the rest of the cap is for the notes). */
export const MAX_READ_MODEL_CHARS = MAX_MODEL_TEXT_CHARS - 500;

function readArgsOf(plan: ExecPlan) {
  return plan.started.tool.case === "readToolCall" ? plan.started.tool.value.args : undefined;
}

/**
 * Numbers the lines `N|text` from `firstLine`, within {@link MAX_READ_MODEL_CHARS}; returns the
 * text and the last line shown.
 */
export function numberLines(lines: readonly string[], firstLine: number): { text: string; lastLine: number } {
  const out: string[] = [];
  let size = 0;
  let last = firstLine - 1;
  for (let i = 0; i < lines.length; i++) {
    const row = `${firstLine + i}|${capLine(lines[i] ?? "")}`;
    if (size + row.length + 1 > MAX_READ_MODEL_CHARS && out.length > 0) break;
    out.push(row);
    size += row.length + 1;
    last = firstLine + i;
  }
  return { text: out.join("\n"), lastLine: last };
}

export function completeRead(plan: ExecPlan, r: ReadResult): ToolOutcome {
  const args = readArgsOf(plan);
  const path = args?.path ?? "";
  const res = r.result;
  const done = (text: string, isError: boolean, result: MessageInitShape<typeof ReadToolCallSchema>["result"]) =>
    outcome(text, isError, toolCall(plan.callId, { case: "readToolCall", value: create(ReadToolCallSchema, { args, result }) }));
  const err = (text: string) => done(text, true, { result: { case: "error", value: { errorMessage: text } } });
  switch (res.case) {
    case "success": {
      const s = res.value;
      if (s.output.case !== "content") {
        const size = s.output.case === "data" ? s.output.value.length : Number(s.fileSize);
        return done(`${s.path || path} is a binary file (${size} bytes); its content cannot be shown as text.`, false, {
          result: { case: "success", value: { path: s.path || path, fileSize: Number(s.fileSize), totalLines: s.totalLines, isEmpty: size === 0 } },
        });
      }
      const content = s.output.value;
      let lines = content.split(/\r?\n/);
      if (lines[lines.length - 1] === "") lines.pop();
      let first = 1;
      if (s.rangeApplied) first = args?.offset ?? 1;
      else if (args?.offset !== undefined || args?.limit !== undefined) {
        // The client returned the whole file: apply the requested range here.
        first = args.offset ?? 1;
        lines = lines.slice(first - 1, args.limit !== undefined ? first - 1 + args.limit : undefined);
      }
      const total = s.totalLines || (s.rangeApplied ? 0 : content.split(/\r?\n/).length);
      const shown = numberLines(lines, first);
      const notes: string[] = [];
      const cutHere = shown.lastLine < first + lines.length - 1;
      if (cutHere || s.truncated) {
        notes.push(`[Output truncated at line ${shown.lastLine}${total ? ` of ${total}` : ""}. Call Read with offset=${shown.lastLine + 1} to continue.]`);
      } else if (total && shown.lastLine < total && lines.length > 0) {
        notes.push(`[Showing lines ${first}-${shown.lastLine} of ${total}.]`);
      }
      const text = lines.length === 0 ? (content === "" ? `${path} is empty.` : `No lines in the requested range (the file has ${total} lines).`) : [shown.text, ...notes].join("\n");
      return done(text, false, {
        result: {
          case: "success",
          value: {
            path: s.path || path,
            output: { case: "content", value: capUi(content) },
            isEmpty: content === "",
            exceededLimit: s.truncated || cutHere,
            totalLines: total,
            fileSize: Number(s.fileSize),
            includeLineNumbers: true,
            readRange: lines.length > 0 ? { startLine: first, endLine: shown.lastLine } : undefined,
          },
        },
      });
    }
    case "fileNotFound":
      return err(`File not found: ${res.value.path || path}. Check the path with Glob or Ls.`);
    case "permissionDenied":
      return err(`Permission denied reading ${res.value.path || path}.`);
    case "rejected":
      return err(`The user rejected reading ${res.value.path || path}${res.value.reason ? `: ${res.value.reason}` : "."}`);
    case "invalidFile":
      return err(`${res.value.path || path} cannot be read${res.value.reason ? `: ${res.value.reason}` : "."} (is it a directory? use Ls.)`);
    case "error":
      return err(`Could not read ${res.value.path || path}: ${res.value.error}`);
    case undefined:
      return err(`The client returned an empty read result for ${path}.`);
  }
}

function countLines(text: string): number {
  if (text === "") return 0;
  const n = text.split("\n").length;
  return text.endsWith("\n") ? n - 1 : n;
}

export function completeWrite(plan: ExecPlan, r: WriteResult): ToolOutcome {
  const fileText = plan.exec.case === "writeArgs" ? plan.exec.value.fileText : "";
  const path = plan.exec.case === "writeArgs" ? plan.exec.value.path : "";
  const args = plan.started.tool.case === "editToolCall" ? plan.started.tool.value.args : undefined;
  const done = (text: string, isError: boolean, result: MessageInitShape<typeof EditToolCallSchema>["result"]) =>
    outcome(text, isError, toolCall(plan.callId, { case: "editToolCall", value: create(EditToolCallSchema, { args, result }) }));
  const res = r.result;
  switch (res.case) {
    case "success": {
      const lines = res.value.linesCreated || countLines(fileText);
      const after = res.value.fileContentAfterWrite ?? fileText;
      return done(`Wrote ${res.value.path || path} (${lines} lines).`, false, {
        result: { case: "success", value: { path: res.value.path || path, linesAdded: lines, afterFullFileContent: capUi(after) } },
      });
    }
    case "permissionDenied":
      return done(`Permission denied writing ${path}${res.value.error ? `: ${res.value.error}` : "."}${res.value.isReadonly ? " (read-only)" : ""}`, true, {
        result: { case: "writePermissionDenied", value: { path, error: res.value.error, isReadonly: res.value.isReadonly } },
      });
    case "rejected":
      return done(`The user rejected writing ${path}${res.value.reason ? `: ${res.value.reason}` : "."}`, true, {
        result: { case: "rejected", value: { path, reason: res.value.reason } },
      });
    case "noSpace": {
      const msg = `No space left on the device writing ${path}.`;
      return done(msg, true, { result: { case: "error", value: { path, error: msg } } });
    }
    case "error":
      return done(`Could not write ${path}: ${res.value.error}`, true, { result: { case: "error", value: { path, error: res.value.error } } });
    case undefined: {
      const msg = `The client returned an empty write result for ${path}.`;
      return done(msg, true, { result: { case: "error", value: { path, error: msg } } });
    }
  }
}

export function completeDelete(plan: ExecPlan, r: DeleteResult): ToolOutcome {
  const args = plan.exec.case === "deleteArgs" ? plan.exec.value : undefined;
  const path = args?.path ?? "";
  const res = r.result;
  const completed = toolCall(plan.callId, { case: "deleteToolCall", value: create(DeleteToolCallSchema, { args, result: r }) });
  switch (res.case) {
    case "success":
      return outcome(`Deleted ${res.value.path || path}.`, false, completed);
    case "fileNotFound":
      return outcome(`File not found: ${path}; nothing was deleted.`, true, completed);
    case "notFile":
      return outcome(`${path} is not a file (it is a ${res.value.actualType || "directory"}); Delete only removes files.`, true, completed);
    case "permissionDenied":
      return outcome(`Permission denied deleting ${path}${res.value.clientVisibleError ? `: ${res.value.clientVisibleError}` : "."}`, true, completed);
    case "fileBusy":
      return outcome(`${path} is in use by another process and was not deleted.`, true, completed);
    case "rejected":
      return outcome(`The user rejected deleting ${path}${res.value.reason ? `: ${res.value.reason}` : "."}`, true, completed);
    case "error":
      return outcome(`Could not delete ${path}: ${res.value.error}`, true, completed);
    case undefined:
      return outcome(`The client returned an empty delete result for ${path}.`, true, completed);
  }
}
