import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { connect } from "node:net";
import { Redis } from "ioredis";

/** One command a client sent, with the commands it ran inside Redis when it was a script. */
export interface MonitoredCommand {
  args: string[];
  /** A script's own calls, in order (empty for a plain command). */
  calls: string[][];
}

export interface CommandMonitor {
  /** Stops recording; every command sent before the call is in the result. */
  stop(): Promise<MonitoredCommand[]>;
}

/**
 * Records every command the Redis at `url` executes (MONITOR on a socket of its own), so a
 * test can pin what an operation costs: "commands inside scripts counted" (docs/benchmarks.md).
 * A script runs atomically and MONITOR lists it before its own calls, so the `lua` lines that
 * follow a command are that script's, even on a Redis shared with other clients. Resolves once
 * recording has started (an ECHO sent afterwards was seen); filter the result by your keys.
 */
export async function monitorCommands(url: string): Promise<CommandMonitor> {
  // A raw socket, not ioredis: ioredis fails with "Command queue state error" when monitor lines
  // are still arriving while a MONITOR connection disconnects (a busy shared Redis).
  const u = new URL(url);
  const socket = connect({ host: u.hostname || "127.0.0.1", port: Number(u.port || 6379) });
  await once(socket, "connect");
  const probe = new Redis(url);
  const rows: MonitoredCommand[] = [];
  const seen = new Set<string>();
  let buffered = "";
  socket.setEncoding("latin1");
  socket.on("error", () => undefined);
  socket.on("data", (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf("\r\n"); nl >= 0; nl = buffered.indexOf("\r\n")) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 2);
      const m = /^\+[\d.]+ \[\S+ (\S+)\] (.*)$/.exec(line);
      if (!m) continue; // +OK of MONITOR itself
      const args = parseMonitorArgs(m[2]!);
      if (m[1] === "lua") {
        rows.at(-1)?.calls.push(args);
      } else if (args[0]?.toLowerCase() === "echo" && args[1]?.startsWith("monitor-probe-")) {
        seen.add(args[1]);
      } else {
        rows.push({ args, calls: [] });
      }
    }
  });
  socket.write("MONITOR\r\n");
  const sync = async () => {
    const token = `monitor-probe-${randomUUID()}`;
    for (let i = 0; !seen.has(token); i++) {
      if (i > 200) throw new Error("monitorCommands: MONITOR saw nothing for 2 s");
      await probe.echo(token);
      if (!seen.has(token)) await new Promise((r) => setTimeout(r, 10));
    }
  };
  await sync();
  rows.length = 0;
  return {
    async stop() {
      await sync();
      socket.destroy();
      probe.disconnect();
      return rows;
    },
  };
}

/** The arguments of a MONITOR line: double-quoted, escaped as Redis's sdscatrepr does. */
function parseMonitorArgs(text: string): string[] {
  const args: string[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== '"') continue;
    let arg = "";
    for (i++; i < text.length && text[i] !== '"'; i++) {
      const c = text[i]!;
      if (c !== "\\") {
        arg += c;
        continue;
      }
      const e = text[++i]!;
      if (e === "x") {
        arg += String.fromCharCode(parseInt(text.slice(i + 1, i + 3), 16));
        i += 2;
      } else {
        arg += ({ n: "\n", r: "\r", t: "\t", a: "\x07", b: "\b" } as Record<string, string>)[e] ?? e;
      }
    }
    args.push(arg);
  }
  return args;
}

/** Redis commands of `rows` that name `needle` in an argument (e.g. a test's key prefix), script calls included. */
export function commandCount(rows: readonly MonitoredCommand[], needle: string): number {
  return rows.filter((r) => r.args.some((a) => a.includes(needle))).reduce((n, r) => n + 1 + r.calls.length, 0);
}
