import { randomUUID } from "node:crypto";
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
 * Records every command the Redis at `url` executes (MONITOR on a connection of its own), so a
 * test can pin what an operation costs: "commands inside scripts counted" (docs/benchmarks.md).
 * A script runs atomically and MONITOR lists it before its own calls, so the `lua` lines that
 * follow a command are that script's, even on a Redis shared with other clients. Resolves once
 * recording has started (an ECHO sent afterwards was seen); filter the result by your keys.
 */
export async function monitorCommands(url: string): Promise<CommandMonitor> {
  const monitor = await new Redis(url).monitor();
  const probe = new Redis(url);
  const rows: MonitoredCommand[] = [];
  const seen = new Set<string>();
  monitor.on("monitor", (_time: string, args: string[], source: string) => {
    if (source === "lua") {
      rows.at(-1)?.calls.push(args);
      return;
    }
    if (args[0]?.toLowerCase() === "echo" && args[1]?.startsWith("monitor-probe-")) {
      seen.add(args[1]);
      return;
    }
    rows.push({ args, calls: [] });
  });
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
      monitor.disconnect();
      probe.disconnect();
      return rows;
    },
  };
}

/** Redis commands of `rows` that name `needle` in an argument (e.g. a test's key prefix), script calls included. */
export function commandCount(rows: readonly MonitoredCommand[], needle: string): number {
  return rows.filter((r) => r.args.some((a) => a.includes(needle))).reduce((n, r) => n + 1 + r.calls.length, 0);
}
