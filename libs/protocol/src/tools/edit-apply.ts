/**
 * Pure string-replace and line-diff helpers of the Edit tool.
 */

export type ReplaceResult =
  | { ok: true; content: string; count: number }
  | { ok: false; reason: "not_found" | "not_unique" | "no_change"; count: number };

function countOccurrences(haystack: string, needle: string): number {
  let count = 0;
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) count++;
  return count;
}

/**
 * Replaces `oldString` by `newString` in `content`: exactly one occurrence unless `replaceAll`.
 * When the file uses CRLF line endings and the strings use LF, the match is retried with CRLF
 * (models almost never reproduce `\r`). `oldString` must not be empty (callers handle creation).
 */
export function applyReplace(content: string, oldString: string, newString: string, replaceAll: boolean): ReplaceResult {
  if (oldString === newString) return { ok: false, reason: "no_change", count: 0 };
  let from = oldString;
  let to = newString;
  let count = countOccurrences(content, from);
  if (count === 0 && content.includes("\r\n") && !oldString.includes("\r\n") && oldString.includes("\n")) {
    from = oldString.replace(/\n/g, "\r\n");
    to = newString.replace(/\n/g, "\r\n");
    count = countOccurrences(content, from);
  }
  if (count === 0) return { ok: false, reason: "not_found", count };
  if (count > 1 && !replaceAll) return { ok: false, reason: "not_unique", count };
  // split/join replaces literally (no `$&` patterns, unlike String.replace with a string).
  const next = replaceAll ? content.split(from).join(to) : spliceFirst(content, from, to);
  return { ok: true, content: next, count: replaceAll ? count : 1 };
}

function spliceFirst(content: string, from: string, to: string): string {
  const i = content.indexOf(from);
  return content.slice(0, i) + to + content.slice(i + from.length);
}

function splitLines(s: string): string[] {
  if (s === "") return [];
  const lines = s.split(/\r?\n/);
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

export interface LineDiff {
  linesAdded: number;
  linesRemoved: number;
  /** A single-hunk unified diff covering the changed region (empty when nothing changed). */
  diff: string;
  /** 1-based first changed line in the new content. */
  firstChangedLine: number;
}

/** The changed region between two texts as one hunk (common prefix and suffix lines excluded). */
export function lineDiff(before: string, after: string, path: string): LineDiff {
  const a = splitLines(before);
  const b = splitLines(after);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const removed = a.slice(start, endA);
  const added = b.slice(start, endB);
  if (removed.length === 0 && added.length === 0) return { linesAdded: 0, linesRemoved: 0, diff: "", firstChangedLine: start + 1 };
  const hunk = `@@ -${start + 1},${removed.length} +${start + 1},${added.length} @@`;
  const body = [...removed.map((l) => `-${l}`), ...added.map((l) => `+${l}`)];
  return {
    linesAdded: added.length,
    linesRemoved: removed.length,
    diff: [`--- ${path}`, `+++ ${path}`, hunk, ...body].join("\n"),
    firstChangedLine: start + 1,
  };
}
