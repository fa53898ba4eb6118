// A private PostgreSQL cluster (initdb into a temp dir, free port, trust auth, fsync off) for
// fault tests that stop and restart the database: never the shared Postgres.
import { execFile } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "../redis/private-server.js";

const run = promisify(execFile);
const ROOT_DIR = "/usr/lib/postgresql";

/** The bin directory of the newest PostgreSQL installed under /usr/lib/postgresql, if any. */
export function postgresBinDir(): string | undefined {
  if (!existsSync(ROOT_DIR)) return undefined;
  const versions = readdirSync(ROOT_DIR)
    .filter((v) => existsSync(join(ROOT_DIR, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(ROOT_DIR, versions[0], "bin") : undefined;
}

export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`. */
  readonly url: string;
  readonly port: number;
  /**
   * Immediate shutdown (as after a crash: open connections are cut, recovery on the next start).
   * The cluster runs with synchronous_commit off, so commits of the last few hundred ms may be
   * lost by it, as after a real crash with that setting: call `checkpoint()` first to keep them.
   */
  stop(): Promise<void>;
  /** CHECKPOINT: every commit so far is on disk and survives `stop()`. */
  checkpoint(): Promise<void>;
  start(): Promise<void>;
  /** Stops the server and removes its data directory. */
  destroy(): Promise<void>;
}

/**
 * initdb as the current user, or as `postgres` when running as root (initdb and postgres refuse
 * to run as root), then starts the server and waits until it accepts a query.
 */
export async function startPostgresServer(timeoutMs = 60_000): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error(`no PostgreSQL under ${ROOT_DIR}`);
  const dir = mkdtempSync(join(tmpdir(), "byok-pg-"));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: gid } = await run("id", ["-g", "postgres"]);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const tool = (name: string, args: string[]) =>
    asRoot ? run("runuser", ["-u", "postgres", "--", join(bin, name), ...args], { timeout: timeoutMs }) : run(join(bin, name), args, { timeout: timeoutMs });
  const data = join(dir, "data");
  await tool("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const server: PrivatePostgres = {
    url,
    port,
    async start() {
      await tool("pg_ctl", ["-D", data, "-l", join(dir, "log"), "-o", options, "-w", "-t", String(Math.ceil(timeoutMs / 1000)), "start"]);
    },
    async stop() {
      await tool("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
    },
    async checkpoint() {
      await tool("psql", ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", "CHECKPOINT"]);
    },
    async destroy() {
      await tool("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await server.start();
  } catch (err) {
    await server.destroy();
    throw err;
  }
  return server;
}
