import type { ChildProcess } from "node:child_process";

/** The output of a spawned process, line by line, and a bounded wait for one line. */
export interface ProcessOutput {
  /** Every stdout/stderr line so far. */
  readonly lines: string[];
  /** Resolves with the exit code, or the signal name when killed by one. */
  readonly exited: Promise<number | string | null>;
  /** The exit code once exited (null when killed by a signal), undefined while running. */
  exitCode(): number | null | undefined;
  /** The first line matching `re`; rejects when the process exits first or after `ms`. */
  waitForLine(re: RegExp, ms?: number): Promise<string>;
}

/** Collects a child's stdout and stderr (spawned with `stdio: [..., "pipe", "pipe"]`) as lines. */
export function watchOutput(child: ChildProcess, label = "process"): ProcessOutput {
  const lines: string[] = [];
  const listeners = new Set<() => void>();
  let code: number | null | undefined;
  const exited = new Promise<number | string | null>((resolve) =>
    child.once("exit", (c, s) => {
      code = c;
      resolve(c ?? s);
      for (const l of listeners) l();
    }),
  );
  let buf = "";
  const onData = (chunk: Buffer) => {
    buf += chunk.toString("utf8");
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
    for (const l of listeners) l();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const waitForLine = (re: RegExp, ms = 20_000) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const hit = lines.find((l) => re.test(l));
        if (hit !== undefined) {
          done();
          resolve(hit);
        } else if (code !== undefined) {
          done();
          reject(new Error(`${label} exited (${code}) before printing ${re}:\n${lines.slice(-30).join("\n")}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${label} did not print ${re} within ${ms} ms:\n${lines.slice(-30).join("\n")}`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });
  return { lines, exited, exitCode: () => code, waitForLine };
}
