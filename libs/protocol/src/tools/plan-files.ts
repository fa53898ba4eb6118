import { create } from "@bufbuild/protobuf";
import {
  DeleteArgsSchema, DiagnosticsArgsSchema, GlobToolArgsSchema, GrepArgsSchema, LsArgsSchema, ReadArgsSchema,
  ReadLintsToolArgsSchema, ReadToolArgsSchema, WriteArgsSchema, EditArgsSchema,
} from "@byok/wire";
import { toolCall } from "./outcome.js";
import type {
  DeleteToolInput, GlobToolInput, GrepToolInput, LsToolInput, ReadLintsToolInput, ReadToolInput, WriteToolInput,
} from "./specs.js";
import type { ExecPlan } from "./types.js";

/**
 * Exec plans of the file and search tools (docs/protocol.md "Bridges"). Each builder takes
 * validated model arguments and returns the exec branch plus the `ToolCall` for
 * `tool_call_started`; `tool_call_id` is set in every args message that has one.
 */

/**
 * The regex Glob sends in `grep_args.pattern`: `^` matches at the start of every line, so
 * `files_with_matches` lists every file the glob selects (files with no line at all, i.e.
 * empty files, cannot match any pattern and are not listed).
 */
export const GLOB_MATCH_ALL_PATTERN = "^";

export function planRead(callId: string, toolName: string, a: ReadToolInput): ExecPlan {
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: { case: "readArgs", value: create(ReadArgsSchema, { path: a.path, toolCallId: callId, offset: a.offset, limit: a.limit }) },
    started: toolCall(callId, {
      case: "readToolCall",
      value: { $typeName: "agent.v1.ReadToolCall", args: create(ReadToolArgsSchema, { path: a.path, offset: a.offset, limit: a.limit, includeLineNumbers: true }) },
    }),
  };
}

export function planWrite(callId: string, toolName: string, a: WriteToolInput): ExecPlan {
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: {
      case: "writeArgs",
      value: create(WriteArgsSchema, { path: a.path, fileText: a.contents, toolCallId: callId, returnFileContentAfterWrite: false }),
    },
    started: toolCall(callId, { case: "editToolCall", value: { $typeName: "agent.v1.EditToolCall", args: create(EditArgsSchema, { path: a.path }) } }),
  };
}

export function planDelete(callId: string, toolName: string, a: DeleteToolInput): ExecPlan {
  const args = create(DeleteArgsSchema, { path: a.path, toolCallId: callId });
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: { case: "deleteArgs", value: args },
    started: toolCall(callId, { case: "deleteToolCall", value: { $typeName: "agent.v1.DeleteToolCall", args } }),
  };
}

export function planGrep(callId: string, toolName: string, a: GrepToolInput): ExecPlan {
  const args = create(GrepArgsSchema, {
    pattern: a.pattern,
    path: a.path,
    glob: a.glob,
    type: a.type,
    outputMode: a.output_mode ?? "content",
    caseInsensitive: a.case_insensitive,
    contextBefore: a.context_before,
    contextAfter: a.context_after,
    context: a.context,
    multiline: a.multiline,
    headLimit: a.head_limit,
    offset: a.offset,
    toolCallId: callId,
  });
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: { case: "grepArgs", value: args },
    started: toolCall(callId, { case: "grepToolCall", value: { $typeName: "agent.v1.GrepToolCall", args } }),
  };
}

export function planGlob(callId: string, toolName: string, a: GlobToolInput): ExecPlan {
  const args = create(GrepArgsSchema, {
    pattern: GLOB_MATCH_ALL_PATTERN,
    path: a.target_directory,
    glob: a.glob_pattern,
    outputMode: "files_with_matches",
    toolCallId: callId,
  });
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: { case: "grepArgs", value: args },
    started: toolCall(callId, {
      case: "globToolCall",
      value: { $typeName: "agent.v1.GlobToolCall", args: create(GlobToolArgsSchema, { globPattern: a.glob_pattern, targetDirectory: a.target_directory }) },
    }),
  };
}

export function planLs(callId: string, toolName: string, a: LsToolInput): ExecPlan {
  const args = create(LsArgsSchema, { path: a.path, ignore: a.ignore ?? [], toolCallId: callId });
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: { case: "lsArgs", value: args },
    started: toolCall(callId, { case: "lsToolCall", value: { $typeName: "agent.v1.LsToolCall", args } }),
  };
}

export function planReadLints(callId: string, toolName: string, a: ReadLintsToolInput): ExecPlan {
  return {
    kind: "exec", callId, toolName, streaming: false,
    exec: { case: "diagnosticsArgs", value: create(DiagnosticsArgsSchema, { path: a.path ?? "", toolCallId: callId }) },
    started: toolCall(callId, {
      case: "readLintsToolCall",
      value: { $typeName: "agent.v1.ReadLintsToolCall", args: create(ReadLintsToolArgsSchema, { paths: a.path ? [a.path] : [] }) },
    }),
  };
}
