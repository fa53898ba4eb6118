import { arr, bool, freeObj, int, obj, str, type ObjectSchema } from "./json-schema.js";
import { TOOL, type BuiltinToolName } from "./names.js";

/**
 * Model-visible definitions of the built-in tools: description + strict JSON schema, and the
 * TypeScript shape each schema validates to. The two are kept side by side on purpose; a
 * change to one must change the other (the plan tests exercise every tool's arguments).
 */
export interface BuiltinToolDef {
  readonly name: BuiltinToolName;
  readonly description: string;
  readonly schema: ObjectSchema;
}

export interface ReadToolInput { path: string; offset?: number; limit?: number }
export interface WriteToolInput { path: string; contents: string }
export interface EditToolInput { path: string; old_string: string; new_string: string; replace_all?: boolean }
export interface DeleteToolInput { path: string }
export type GrepOutputMode = "content" | "files_with_matches" | "count";
export interface GrepToolInput {
  pattern: string; path?: string; glob?: string; type?: string; output_mode?: GrepOutputMode;
  case_insensitive?: boolean; context_before?: number; context_after?: number; context?: number;
  multiline?: boolean; head_limit?: number; offset?: number;
}
export interface GlobToolInput { glob_pattern: string; target_directory?: string }
export interface LsToolInput { path: string; ignore?: string[] }
export interface ReadLintsToolInput { path?: string }
export interface ShellToolInput {
  command: string; working_directory?: string; timeout_ms?: number; is_background?: boolean; description?: string;
}
export interface AwaitShellToolInput { shell_id: number; block_until_ms?: number; pattern?: string }
export interface WriteShellStdinToolInput { shell_id: number; chars: string }
export interface ForceBackgroundShellToolInput { tool_call_id: string }
export interface TaskToolInput {
  description: string; prompt: string; subagent_type?: string; model?: string; readonly?: boolean;
  run_in_background?: boolean; resume_agent_id?: string;
}
export type TodoStatusName = "pending" | "in_progress" | "completed" | "cancelled";
export interface TodoWriteToolInput { todos: { id: string; content: string; status: TodoStatusName }[]; merge: boolean }
export interface AskQuestionToolInput {
  title?: string;
  questions: { id: string; prompt: string; options: { id: string; label: string }[]; allow_multiple?: boolean }[];
}
export interface CreatePlanToolInput { name: string; overview: string; plan: string; todos?: { id: string; content: string }[] }
export type SwitchableMode = "agent" | "ask" | "plan" | "debug";
export interface SwitchModeToolInput { target_mode_id: SwitchableMode; explanation?: string }
export interface WebSearchToolInput { search_term: string }
export interface WebFetchToolInput { url: string }
export interface CallMcpToolInput { server: string; tool_name: string; arguments?: Record<string, unknown> }
export interface ListMcpResourcesToolInput { server?: string }
export interface FetchMcpResourceToolInput { server: string; uri: string; download_path?: string }

/** Upper bound the Shell tool accepts for `timeout_ms` (10 minutes). */
export const SHELL_MAX_TIMEOUT_MS = 600_000;
/** Upper bound AwaitShell accepts for `block_until_ms` (10 minutes). */
export const AWAIT_MAX_BLOCK_MS = 600_000;

const path = (what: string) => str(`${what} (absolute, or relative to the workspace root).`, { minLength: 1 });
const todoStatus = str("Status of the item.", { enum: ["pending", "in_progress", "completed", "cancelled"] });

export const BUILTIN_TOOLS: Readonly<Record<BuiltinToolName, BuiltinToolDef>> = {
  [TOOL.Read]: {
    name: TOOL.Read,
    description:
      "Read a file from the user's workspace. The result shows each line as `LINE_NUMBER|CONTENT`; the " +
      "`LINE_NUMBER|` prefix is not part of the file (never copy it into Edit's old_string). Large files are " +
      "truncated: use `offset` and `limit` to read a specific range. Reading a directory fails; use Ls instead.",
    schema: obj({
      path: path("File to read"),
      offset: int("1-based line number to start reading from.", { minimum: 1 }),
      limit: int("Maximum number of lines to read.", { minimum: 1 }),
    }, ["path"]),
  },
  [TOOL.Write]: {
    name: TOOL.Write,
    description:
      "Create a file or overwrite it entirely with `contents`. Prefer Edit for changes to an existing file; " +
      "read a file before overwriting it. Parent directories are created as needed.",
    schema: obj({
      path: path("File to write"),
      contents: str("The complete new content of the file."),
    }, ["path", "contents"]),
  },
  [TOOL.Edit]: {
    name: TOOL.Edit,
    description:
      "Replace an exact string in a file. `old_string` must match the file's current text exactly (including " +
      "whitespace and indentation, without Read's line-number prefixes) and must occur exactly once unless " +
      "`replace_all` is true; include surrounding lines to make it unique. With an empty `old_string` and a path " +
      "that does not exist, the file is created with `new_string`.",
    schema: obj({
      path: path("File to edit"),
      old_string: str("Exact text to replace."),
      new_string: str("Replacement text (must differ from old_string)."),
      replace_all: bool("Replace every occurrence instead of requiring exactly one. Default false."),
    }, ["path", "old_string", "new_string"]),
  },
  [TOOL.Delete]: {
    name: TOOL.Delete,
    description: "Delete a file from the workspace. Fails for directories and missing files.",
    schema: obj({ path: path("File to delete") }, ["path"]),
  },
  [TOOL.Grep]: {
    name: TOOL.Grep,
    description:
      "Search file contents with a ripgrep regular expression. `output_mode`: \"content\" (matching lines with " +
      "line numbers; default), \"files_with_matches\" (paths only) or \"count\" (matches per file). Narrow the " +
      "search with `path`, `glob` (e.g. \"*.ts\") or `type` (e.g. \"py\"). Results are capped; use head_limit/offset to page.",
    schema: obj({
      pattern: str("Regular expression (ripgrep syntax).", { minLength: 1 }),
      path: str("File or directory to search; defaults to the workspace root."),
      glob: str("Only search files matching this glob."),
      type: str("Only search files of this ripgrep type (e.g. ts, py, rust)."),
      output_mode: str("What to return. Default \"content\".", { enum: ["content", "files_with_matches", "count"] }),
      case_insensitive: bool("Case-insensitive search."),
      context_before: int("Lines of context before each match (content mode).", { minimum: 0 }),
      context_after: int("Lines of context after each match (content mode).", { minimum: 0 }),
      context: int("Lines of context before and after each match (content mode).", { minimum: 0 }),
      multiline: bool("Let patterns span lines (`.` matches newlines)."),
      head_limit: int("Return at most this many lines / files / counts.", { minimum: 1 }),
      offset: int("Skip this many results before head_limit applies.", { minimum: 0 }),
    }, ["pattern"]),
  },
  [TOOL.Glob]: {
    name: TOOL.Glob,
    description:
      "Find files whose path matches a glob pattern (e.g. \"**/*.test.ts\", \"src/**/index.*\"). Returns " +
      "matching file paths. Ignored files (.gitignore) and empty files are not listed.",
    schema: obj({
      glob_pattern: str("Glob pattern to match file paths against.", { minLength: 1 }),
      target_directory: str("Directory to search in; defaults to the workspace root."),
    }, ["glob_pattern"]),
  },
  [TOOL.Ls]: {
    name: TOOL.Ls,
    description: "List the files and directories under a directory, as a tree.",
    schema: obj({
      path: path("Directory to list"),
      ignore: arr("Glob patterns of entries to leave out.", str("Glob pattern.")),
    }, ["path"]),
  },
  [TOOL.ReadLints]: {
    name: TOOL.ReadLints,
    description:
      "Read the editor's current diagnostics (linter and compiler errors and warnings) for a file or directory, " +
      "or for the whole workspace when `path` is omitted. Use after editing to check your changes.",
    schema: obj({ path: str("File or directory; omit for the whole workspace.") }, []),
  },
  [TOOL.Shell]: {
    name: TOOL.Shell,
    description:
      "Run a shell command in the user's terminal (the user may have to approve it). Returns stdout, stderr and " +
      "the exit code; long output is truncated (head and tail kept). A command still running when `timeout_ms` " +
      "expires, or started with `is_background: true`, continues in the background and the result gives its " +
      "shell id: use AwaitShell to wait for it and WriteShellStdin to send it input. Prefer the Read, Grep, Glob " +
      "and Ls tools over cat/grep/find/ls.",
    schema: obj({
      command: str("The command line to run.", { minLength: 1 }),
      working_directory: str("Directory to run in; defaults to the workspace root."),
      timeout_ms: int(`How long to wait before the command is moved to the background (max ${SHELL_MAX_TIMEOUT_MS}). Default 120000.`, {
        minimum: 1, maximum: SHELL_MAX_TIMEOUT_MS,
      }),
      is_background: bool("Start the command in the background right away (servers, watchers)."),
      description: str("Five to ten words saying what the command does, shown to the user."),
    }, ["command"]),
  },
  [TOOL.AwaitShell]: {
    name: TOOL.AwaitShell,
    description:
      "Wait for a background shell (started by Shell) to finish, up to `block_until_ms`, optionally until its " +
      "output matches `pattern`. Returns whether it finished, its exit code and its recent output.",
    schema: obj({
      shell_id: int("The shell id from the Shell result.", { minimum: 0 }),
      block_until_ms: int(`Maximum time to wait (max ${AWAIT_MAX_BLOCK_MS}). Default 30000.`, { minimum: 0, maximum: AWAIT_MAX_BLOCK_MS }),
      pattern: str("Regular expression: stop waiting as soon as the output matches it."),
    }, ["shell_id"]),
  },
  [TOOL.WriteShellStdin]: {
    name: TOOL.WriteShellStdin,
    description:
      "Send characters to the standard input of a running background shell (e.g. answer a prompt). Include " +
      "\"\\n\" to press Enter.",
    schema: obj({
      shell_id: int("The shell id from the Shell result.", { minimum: 0 }),
      chars: str("Characters to write.", { minLength: 1 }),
    }, ["shell_id", "chars"]),
  },
  [TOOL.ForceBackgroundShell]: {
    name: TOOL.ForceBackgroundShell,
    description:
      "Move a running Shell command to the background so it keeps running without blocking. `tool_call_id` is " +
      "the id of the Shell tool call that started it.",
    schema: obj({ tool_call_id: str("Id of the Shell tool call.", { minLength: 1 }) }, ["tool_call_id"]),
  },
  [TOOL.Task]: {
    name: TOOL.Task,
    description:
      "Start a subagent that works on a self-contained task with its own context and tools, and returns its final " +
      "report. Give it a complete, specific prompt (it does not see this conversation). Use for broad " +
      "explorations or independent pieces of work.",
    schema: obj({
      description: str("Three to five words describing the task, shown to the user.", { minLength: 1 }),
      prompt: str("Full instructions for the subagent.", { minLength: 1 }),
      subagent_type: str("Kind of subagent, e.g. \"explore\" (read-only codebase exploration) or \"generalPurpose\". Default generalPurpose."),
      model: str("Model id for the subagent; defaults to the current model."),
      readonly: bool("Forbid the subagent from changing files."),
      run_in_background: bool("Return immediately and let the subagent run in the background."),
      resume_agent_id: str("Agent id of an earlier subagent to continue."),
    }, ["description", "prompt"]),
  },
  [TOOL.TodoWrite]: {
    name: TOOL.TodoWrite,
    description:
      "Create or update the task list shown to the user. With `merge: true` the given items update or add to the " +
      "existing list by id; with `merge: false` they replace it. Keep exactly one item in_progress while working.",
    schema: obj({
      todos: arr("Todo items.", obj({
        id: str("Stable id of the item.", { minLength: 1 }),
        content: str("What to do."),
        status: todoStatus,
      }, ["id", "content", "status"])),
      merge: bool("Merge into the existing list (true) or replace it (false)."),
    }, ["todos", "merge"]),
  },
  [TOOL.AskQuestion]: {
    name: TOOL.AskQuestion,
    description:
      "Ask the user one or more multiple-choice questions and wait for the answers. Use when a decision " +
      "genuinely needs the user; each question needs at least two options.",
    schema: obj({
      title: str("Short title of the question set."),
      questions: arr("Questions to ask.", obj({
        id: str("Id of the question.", { minLength: 1 }),
        prompt: str("The question.", { minLength: 1 }),
        options: arr("Possible answers.", obj({
          id: str("Id of the option.", { minLength: 1 }),
          label: str("Text shown for the option.", { minLength: 1 }),
        }, ["id", "label"]), { minItems: 2 }),
        allow_multiple: bool("Let the user pick several options."),
      }, ["id", "prompt", "options"]), { minItems: 1 }),
    }, ["questions"]),
  },
  [TOOL.CreatePlan]: {
    name: TOOL.CreatePlan,
    description:
      "Present the implementation plan to the user for review. `plan` is the full plan in Markdown; `todos` are " +
      "the concrete steps. Call this once the plan is complete instead of writing files.",
    schema: obj({
      name: str("Short name of the plan.", { minLength: 1 }),
      overview: str("One or two sentences summarising the plan."),
      plan: str("The plan in Markdown.", { minLength: 1 }),
      todos: arr("Implementation steps.", obj({
        id: str("Id of the step.", { minLength: 1 }),
        content: str("What the step does.", { minLength: 1 }),
      }, ["id", "content"])),
    }, ["name", "overview", "plan"]),
  },
  [TOOL.SwitchMode]: {
    name: TOOL.SwitchMode,
    description:
      "Ask the user to switch the conversation to another mode: \"plan\" to design before coding, \"ask\" for " +
      "read-only questions, \"debug\" to investigate a bug, \"agent\" to implement. The user may refuse.",
    schema: obj({
      target_mode_id: str("Mode to switch to.", { enum: ["agent", "ask", "plan", "debug"] }),
      explanation: str("Why the switch helps, shown to the user."),
    }, ["target_mode_id"]),
  },
  [TOOL.WebSearch]: {
    name: TOOL.WebSearch,
    description: "Search the web (the user may have to approve it). Returns titles, URLs and snippets.",
    schema: obj({ search_term: str("The search query.", { minLength: 1 }) }, ["search_term"]),
  },
  [TOOL.WebFetch]: {
    name: TOOL.WebFetch,
    description: "Fetch a web page by URL (the user may have to approve it) and return its content as text/Markdown.",
    schema: obj({ url: str("Absolute http(s) URL.", { minLength: 1 }) }, ["url"]),
  },
  [TOOL.CallMcpTool]: {
    name: TOOL.CallMcpTool,
    description: "Call a tool of one of the user's MCP servers.",
    schema: obj({
      server: str("MCP server identifier.", { minLength: 1 }),
      tool_name: str("Name of the tool on that server.", { minLength: 1 }),
      arguments: freeObj("Arguments object, as the tool's input schema describes."),
    }, ["server", "tool_name"]),
  },
  [TOOL.ListMcpResources]: {
    name: TOOL.ListMcpResources,
    description: "List the resources (documents, data) the user's MCP servers offer.",
    schema: obj({ server: str("Only list this server's resources.") }, []),
  },
  [TOOL.FetchMcpResource]: {
    name: TOOL.FetchMcpResource,
    description: "Read one resource of an MCP server by URI (see ListMcpResources).",
    schema: obj({
      server: str("MCP server identifier.", { minLength: 1 }),
      uri: str("Resource URI.", { minLength: 1 }),
      download_path: str("Save the resource to this workspace path instead of returning its content."),
    }, ["server", "uri"]),
  },
};
