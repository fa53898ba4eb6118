import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  DiagnosticSeverity, GlobToolCallSchema, GrepToolCallSchema, LsToolCallSchema, ReadLintsToolCallSchema,
  type Diagnostic, type DiagnosticsResult, type GrepResult, type GrepUnionResult, type LsDirectoryTreeNode, type LsResult,
} from "@byok/wire";
import { MAX_LIST_ENTRIES, capLine } from "./limits.js";
import { outcome, toolCall } from "./outcome.js";
import type { ExecPlan, ToolOutcome } from "./types.js";

/**
 * Completion of Grep, Glob, Ls and ReadLints. Lists are capped at {@link MAX_LIST_ENTRIES}
 * entries with a note; client-side truncation flags are reported to the model too.
 */

function cappedList(lines: readonly string[], what: string, hint: string): string {
  if (lines.length <= MAX_LIST_ENTRIES) return lines.join("\n");
  return `${lines.slice(0, MAX_LIST_ENTRIES).join("\n")}\n[... ${lines.length - MAX_LIST_ENTRIES} more ${what} not shown. ${hint}]`;
}

function unionLines(u: GrepUnionResult): { lines: string[]; truncated: boolean; kind: "content" | "files" | "count" | "none" } {
  const r = u.result;
  switch (r.case) {
    case "content": {
      const lines: string[] = [];
      for (const fm of r.value.matches) {
        for (const m of fm.matches) lines.push(`${fm.file}${m.isContextLine ? "-" : ":"}${m.lineNumber}${m.isContextLine ? "-" : ":"}${capLine(m.content)}`);
      }
      return { lines, truncated: r.value.clientTruncated || r.value.ripgrepTruncated, kind: "content" };
    }
    case "files":
      return { lines: [...r.value.files], truncated: r.value.clientTruncated || r.value.ripgrepTruncated, kind: "files" };
    case "count":
      return { lines: r.value.counts.map((c) => `${c.file}: ${c.count}`), truncated: r.value.clientTruncated || r.value.ripgrepTruncated, kind: "count" };
    case undefined:
      return { lines: [], truncated: false, kind: "none" };
  }
}

function grepUnions(r: GrepResult): GrepUnionResult[] {
  if (r.result.case !== "success") return [];
  const s = r.result.value;
  const out = Object.keys(s.workspaceResults).sort().map((k) => s.workspaceResults[k]).filter((u): u is GrepUnionResult => u !== undefined);
  if (out.length === 0 && s.activeEditorResult) out.push(s.activeEditorResult);
  return out;
}

export function completeGrep(plan: ExecPlan, r: GrepResult): ToolOutcome {
  const args = plan.exec.case === "grepArgs" ? plan.exec.value : undefined;
  const completed = toolCall(plan.callId, { case: "grepToolCall", value: create(GrepToolCallSchema, { args, result: r }) });
  if (r.result.case === "error") return outcome(`Grep failed: ${r.result.value.error}`, true, completed);
  if (r.result.case !== "success") return outcome("The client returned an empty grep result.", true, completed);
  const parts = grepUnions(r).map(unionLines);
  const lines = parts.flatMap((p) => p.lines);
  const truncated = parts.some((p) => p.truncated);
  if (lines.length === 0) return outcome(`No matches for ${JSON.stringify(args?.pattern ?? "")}.`, false, completed);
  const what = parts[0]?.kind === "files" ? "files" : parts[0]?.kind === "count" ? "files" : "lines";
  const body = cappedList(lines, what, "Narrow the search with path, glob or type, or page with head_limit/offset.");
  const note = truncated ? "\n[The client truncated the results; narrow the search to see everything.]" : "";
  return outcome(`${body}${note}`, false, completed);
}

/** Glob runs as `grep_args` with files_with_matches; it renders as a `glob_tool_call`. */
export function completeGlob(plan: ExecPlan, r: GrepResult): ToolOutcome {
  const args = plan.started.tool.case === "globToolCall" ? plan.started.tool.value.args : undefined;
  const pattern = args?.globPattern ?? "";
  if (r.result.case !== "success") {
    const error = r.result.case === "error" ? r.result.value.error : "The client returned an empty result.";
    return outcome(`Glob failed: ${error}`, true, toolCall(plan.callId, {
      case: "globToolCall", value: create(GlobToolCallSchema, { args, result: { result: { case: "error", value: { error } } } }),
    }));
  }
  const parts = grepUnions(r);
  const files: string[] = [];
  let clientTruncated = false;
  let ripgrepTruncated = false;
  for (const u of parts) {
    if (u.result.case === "files") {
      files.push(...u.result.value.files);
      clientTruncated ||= u.result.value.clientTruncated;
      ripgrepTruncated ||= u.result.value.ripgrepTruncated;
    } else if (u.result.case === "content") {
      files.push(...u.result.value.matches.map((m) => m.file));
    } else if (u.result.case === "count") {
      files.push(...u.result.value.counts.map((c) => c.file));
    }
  }
  const completed = toolCall(plan.callId, {
    case: "globToolCall",
    value: create(GlobToolCallSchema, {
      args,
      result: {
        result: {
          case: "success",
          value: { pattern, path: args?.targetDirectory ?? "", files: files.slice(0, MAX_LIST_ENTRIES), totalFiles: files.length, clientTruncated, ripgrepTruncated },
        },
      },
    }),
  });
  if (files.length === 0) return outcome(`No files match ${JSON.stringify(pattern)}.`, false, completed);
  const note = clientTruncated || ripgrepTruncated ? "\n[The client truncated the list; use a narrower pattern.]" : "";
  return outcome(`${cappedList(files, "files", "Use a narrower pattern or target_directory.")}${note}`, false, completed);
}

function renderTree(root: LsDirectoryTreeNode): string[] {
  const lines: string[] = [];
  const walk = (node: LsDirectoryTreeNode, depth: number) => {
    const indent = "  ".repeat(depth);
    for (const d of node.childrenDirs) {
      if (lines.length > MAX_LIST_ENTRIES) return;
      const name = d.absPath.split(/[\\/]/).filter(Boolean).pop() ?? d.absPath;
      lines.push(`${indent}${name}/${d.childrenWereProcessed ? "" : ` (${d.numFiles} files, not expanded)`}`);
      walk(d, depth + 1);
    }
    for (const f of node.childrenFiles) {
      if (lines.length > MAX_LIST_ENTRIES) return;
      lines.push(`${indent}${f.name}`);
    }
  };
  walk(root, 0);
  return lines;
}

export function completeLs(plan: ExecPlan, r: LsResult): ToolOutcome {
  const args = plan.exec.case === "lsArgs" ? plan.exec.value : undefined;
  const path = args?.path ?? "";
  const completed = toolCall(plan.callId, { case: "lsToolCall", value: create(LsToolCallSchema, { args, result: r }) });
  const res = r.result;
  switch (res.case) {
    case "success":
    case "timeout": {
      const root = res.value.directoryTreeRoot;
      const lines = root ? renderTree(root) : [];
      const head = `${root?.absPath || path}/`;
      const body = lines.length === 0 ? `${head}\n(empty directory)` : `${head}\n${cappedList(lines, "entries", "List a subdirectory instead.")}`;
      const note = res.case === "timeout" ? "\n[Listing timed out; the tree above is partial. List a subdirectory.]" : "";
      return outcome(`${body}${note}`, false, completed);
    }
    case "error":
      return outcome(`Could not list ${res.value.path || path}: ${res.value.error}`, true, completed);
    case "rejected":
      return outcome(`The user rejected listing ${res.value.path || path}${res.value.reason ? `: ${res.value.reason}` : "."}`, true, completed);
    case undefined:
      return outcome(`The client returned an empty list result for ${path}.`, true, completed);
  }
}

const SEVERITY: Readonly<Record<number, string>> = {
  [DiagnosticSeverity.ERROR]: "error",
  [DiagnosticSeverity.WARNING]: "warning",
  [DiagnosticSeverity.INFORMATION]: "info",
  [DiagnosticSeverity.HINT]: "hint",
};

/** `path:line:column severity: message [source code]`, positions as the client reports them. */
function diagnosticLine(path: string, d: Diagnostic): string {
  const at = d.range?.start ? `:${d.range.start.line}:${d.range.start.column}` : "";
  const src = [d.source, d.code].filter(Boolean).join(" ");
  return `${path}${at} ${SEVERITY[d.severity] ?? "diagnostic"}: ${capLine(d.message)}${src ? ` [${src}]` : ""}${d.isStale ? " (stale)" : ""}`;
}

export function completeDiagnostics(plan: ExecPlan, r: DiagnosticsResult): ToolOutcome {
  const args = plan.started.tool.case === "readLintsToolCall" ? plan.started.tool.value.args : undefined;
  const path = plan.exec.case === "diagnosticsArgs" ? plan.exec.value.path : "";
  const where = path || "the workspace";
  const res = r.result;
  const done = (text: string, isError: boolean, result: MessageInitShape<typeof ReadLintsToolCallSchema>) =>
    outcome(text, isError, toolCall(plan.callId, { case: "readLintsToolCall", value: create(ReadLintsToolCallSchema, { args, ...result }) }));
  const err = (text: string) => done(text, true, { result: { result: { case: "error", value: { errorMessage: text } } } });
  switch (res.case) {
    case "success": {
      const s = res.value;
      const filePath = s.path || path;
      const lines = s.diagnostics.map((d) => diagnosticLine(filePath, d));
      const total = s.totalDiagnostics || s.diagnostics.length;
      const result = {
        result: {
          case: "success" as const,
          value: {
            fileDiagnostics: [{
              path: filePath,
              diagnosticsCount: total,
              diagnostics: s.diagnostics.slice(0, MAX_LIST_ENTRIES).map((d) => ({
                severity: d.severity, message: d.message, source: d.source, code: d.code, isStale: d.isStale,
                range: d.range ? { start: d.range.start, end: d.range.end } : undefined,
              })),
            }],
            totalFiles: 1,
            totalDiagnostics: total,
          },
        },
      };
      if (lines.length === 0) return done(`No diagnostics in ${where}.`, false, { result });
      return done(`${total} diagnostic${total === 1 ? "" : "s"} in ${where}:\n${cappedList(lines, "diagnostics", "Read lints of a single file.")}`, false, { result });
    }
    case "fileNotFound":
      return err(`File not found: ${res.value.path || where}.`);
    case "permissionDenied":
      return err(`Permission denied reading diagnostics of ${res.value.path || where}.`);
    case "rejected":
      return err(`The user rejected reading diagnostics${res.value.reason ? `: ${res.value.reason}` : "."}`);
    case "error":
      return err(`Could not read diagnostics of ${res.value.path || where}: ${res.value.error}`);
    case undefined:
      return err("The client returned an empty diagnostics result.");
  }
}
