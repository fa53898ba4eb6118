import { spawn } from "node:child_process";
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { create } from "@bufbuild/protobuf";
import {
  AgentClientMessageSchema, ExecClientMessageSchema,
  type AgentClientMessage, type ExecServerMessage,
} from "@byok/wire";

/**
 * Plays the Cursor client's local side of the exec bridge on a real directory: read, write,
 * delete and shell_stream run for real (shell through `bash -c` in the workspace), answered
 * with the matching `exec_client_message` results. For tests and the demo; not a sandbox.
 */
export interface WorkspaceExecutor {
  readonly root: string;
  /** The client messages answering `exec` (several for a streaming shell), in order. */
  execute(exec: ExecServerMessage): Promise<AgentClientMessage[]>;
  /** Every exec branch received, in order. */
  readonly received: string[];
}

function result(id: number, execId: string, message: ExecClientMessageInit): AgentClientMessage {
  return create(AgentClientMessageSchema, {
    message: { case: "execClientMessage", value: create(ExecClientMessageSchema, { id, execId, message }) },
  });
}

type ExecClientMessageInit = Parameters<typeof create<typeof ExecClientMessageSchema>>[1] extends infer I
  ? I extends { message?: infer M } ? M : never
  : never;

export function createWorkspaceExecutor(root: string): WorkspaceExecutor {
  const received: string[] = [];
  const inside = (p: string) => {
    const full = isAbsolute(p) ? p : resolve(root, p);
    if (relative(root, full).startsWith("..")) throw new Error(`path outside the workspace: ${p}`);
    return full;
  };
  return {
    root,
    received,
    async execute(exec) {
      const { id, execId } = exec;
      const m = exec.message;
      received.push(m.case ?? "none");
      switch (m.case) {
        case "readArgs": {
          const path = inside(m.value.path);
          try {
            const content = await readFile(path, "utf8");
            const size = (await stat(path)).size;
            return [result(id, execId, {
              case: "readResult",
              value: { result: { case: "success", value: { path: m.value.path, totalLines: content.split("\n").length, fileSize: BigInt(size), truncated: false, rangeApplied: false, output: { case: "content", value: content } } } },
            })];
          } catch {
            return [result(id, execId, { case: "readResult", value: { result: { case: "fileNotFound", value: { path: m.value.path } } } })];
          }
        }
        case "writeArgs": {
          const path = inside(m.value.path);
          await mkdir(dirname(path), { recursive: true });
          await writeFile(path, m.value.fileText);
          return [result(id, execId, {
            case: "writeResult",
            value: { result: { case: "success", value: { path: m.value.path, linesCreated: m.value.fileText.split("\n").length, fileSize: Buffer.byteLength(m.value.fileText), ...(m.value.returnFileContentAfterWrite ? { fileContentAfterWrite: m.value.fileText } : {}) } } },
          })];
        }
        case "deleteArgs": {
          await rm(inside(m.value.path), { force: true });
          return [result(id, execId, { case: "deleteResult", value: { result: { case: "success", value: { path: m.value.path } } } })];
        }
        case "shellStreamArgs": {
          const cwd = m.value.workingDirectory ? inside(m.value.workingDirectory) : root;
          const out: AgentClientMessage[] = [result(id, execId, { case: "shellStream", value: { event: { case: "start", value: {} } } })];
          const code = await new Promise<number>((done) => {
            const child = spawn("bash", ["-c", m.value.command], { cwd, stdio: ["ignore", "pipe", "pipe"] });
            child.stdout.on("data", (d: Buffer) => out.push(result(id, execId, { case: "shellStream", value: { event: { case: "stdout", value: { data: d.toString("utf8") } } } })));
            child.stderr.on("data", (d: Buffer) => out.push(result(id, execId, { case: "shellStream", value: { event: { case: "stderr", value: { data: d.toString("utf8") } } } })));
            child.on("close", (c) => done(c ?? 1));
          });
          out.push(result(id, execId, { case: "shellStream", value: { event: { case: "exit", value: { code, cwd, aborted: false } } } }));
          return out;
        }
        default:
          return [create(AgentClientMessageSchema, {
            message: { case: "execClientControlMessage", value: { message: { case: "throw", value: { id, error: `the test workspace does not implement ${m.case ?? "this exec"}` } } } },
          })];
      }
    },
  };
}

/** A fresh workspace directory with `files` (relative path → content). */
export async function makeWorkspace(dir: string, files: Record<string, string>): Promise<string> {
  for (const [p, content] of Object.entries(files)) {
    const full = join(dir, p);
    await mkdir(dirname(full), { recursive: true });
    await writeFile(full, content);
  }
  return dir;
}
