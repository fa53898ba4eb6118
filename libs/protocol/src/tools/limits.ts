/**
 * Truncation limits of tool results. Model-facing limits keep one tool result well inside a
 * context window; UI limits bound what goes into `ToolCall` frames and checkpoints. Every
 * truncation leaves a note saying what was cut and how to get the rest.
 */

/** Hard cap of any tool result text the model sees (≈10k tokens). */
export const MAX_MODEL_TEXT_CHARS = 40_000;
/** Cap of shell output (stdout + stderr) the model sees; head and tail are kept. */
export const MAX_SHELL_MODEL_CHARS = 20_000;
/** Share of {@link MAX_SHELL_MODEL_CHARS} given to the head of the output (the rest is the tail, where errors usually are). */
export const SHELL_HEAD_SHARE = 0.3;
/** At most this many entries (grep lines, files, directory entries, diagnostics) in a model-facing list. */
export const MAX_LIST_ENTRIES = 500;
/** One line of file content or a grep match longer than this is cut. */
export const MAX_LINE_CHARS = 2_000;
/** Cap of text copied into a `ToolCall` for the client UI (file content, shell stdout / stderr). */
export const MAX_UI_TEXT_CHARS = 200_000;
/** Memory bound of one shell stream's aggregated output per channel (head + tail are kept). */
export const MAX_SHELL_BUFFER_CHARS = 400_000;

/** Cuts `text` to `max` characters, appending a note (with `hint`) when it was cut. */
export function truncateHead(text: string, max: number, hint = ""): string {
  if (text.length <= max) return text;
  const omitted = text.length - max;
  return `${text.slice(0, max)}\n[... truncated: ${omitted} more characters${hint ? `. ${hint}` : ""}]`;
}

/** Keeps the head and the tail of `text` within `max` characters, with a note in the middle. */
export function truncateMiddle(text: string, max: number, headShare = 0.5): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * headShare);
  const tail = max - head;
  const omitted = text.length - max;
  return `${text.slice(0, head)}\n[... ${omitted} characters omitted ...]\n${text.slice(text.length - tail)}`;
}

/** Cuts one line to {@link MAX_LINE_CHARS}. */
export function capLine(line: string): string {
  return line.length <= MAX_LINE_CHARS ? line : `${line.slice(0, MAX_LINE_CHARS)} [... line cut]`;
}

/** Cuts text for a UI field (no note: the UI shows its own truncation state where the wire has a flag). */
export function capUi(text: string): string {
  return text.length <= MAX_UI_TEXT_CHARS ? text : text.slice(0, MAX_UI_TEXT_CHARS);
}
