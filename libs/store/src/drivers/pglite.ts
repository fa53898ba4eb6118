/**
 * Embedded driver: PGlite (Postgres compiled to WASM), run on one thread of its own per process
 * (pglite-host.ts) so its statements never hold up the event loop that serves streams
 * (docs/architecture.md "The embedded store's thread"). PGlite has a single connection and runs
 * each transaction under a mutex that also holds back standalone queries, so transactions are
 * serialised by construction, as they were when it ran on the main thread.
 */
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { PGlite, QueryOptions, Results, Transaction } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { migrate } from "drizzle-orm/pglite/migrator";
import { migrationConfig } from "../migrations.js";
import type { OpenedDatabase } from "./opened.js";
import { crossedError, type HostReply, type HostRequest } from "./pglite-messages.js";

/** Each kind of request without its id: `StoreThread.call` numbers it. */
type WithoutId<T> = T extends unknown ? Omit<T, "id"> : never;
type Request = WithoutId<HostRequest>;

/**
 * The process's embedded-store thread. One per process, started by the first `openPglite` and
 * shared by every database it opens (a thread costs a module load and a WASM compile). It holds
 * the process open only while a request is waiting for its reply, so a process that closed its
 * stores (or forgot to) still exits. If the thread dies, every waiting request fails with the
 * reason, the databases it held are gone, and the next `openPglite` starts a new thread.
 */
class StoreThread {
  readonly #worker: Worker;
  readonly #waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #nextId = 1;
  #exited: Error | undefined;

  constructor() {
    this.#worker = new Worker(hostEntry.entry, { eval: hostEntry.eval, name: "byok-embedded-store" });
    this.#worker.unref();
    this.#worker.on("message", (reply: HostReply) => this.#settle(reply));
    this.#worker.on("error", (e) => this.#fail(e));
    this.#worker.on("exit", (code) => this.#fail(new Error(`the embedded database thread exited with code ${code}`)));
  }

  get alive(): boolean {
    return this.#exited === undefined;
  }

  call(req: Request): Promise<unknown> {
    if (this.#exited) return Promise.reject(this.#exited);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      if (this.#waiting.size === 0) this.#worker.ref();
      this.#waiting.set(id, { resolve, reject });
      try {
        this.#worker.postMessage({ ...req, id } as HostRequest);
      } catch (e) {
        // A parameter that cannot be cloned (DataCloneError): this call fails, the thread serves on.
        this.#waiting.delete(id);
        if (this.#waiting.size === 0) this.#worker.unref();
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  }

  #settle(reply: HostReply): void {
    const w = this.#waiting.get(reply.id);
    if (!w) return;
    this.#waiting.delete(reply.id);
    if (this.#waiting.size === 0) this.#worker.unref();
    if (reply.ok) w.resolve(reply.value);
    else w.reject(crossedError(reply.error));
  }

  /** Ends the thread; what waits fails as on any exit. */
  async stop(): Promise<void> {
    await this.#worker.terminate();
  }

  #fail(e: Error): void {
    this.#exited ??= e;
    for (const w of this.#waiting.values()) w.reject(this.#exited);
    this.#waiting.clear();
    this.#worker.unref();
  }
}

/**
 * The thread's entry: the compiled pglite-host.js beside this file in the image; from the
 * TypeScript sources (tests, `npm start`) pglite-host.ts behind tsx's loader, registered by a
 * one-line bootstrap (the thread does not inherit vitest's or tsx's module loading). The thread
 * inherits the process's flags: passing `execArgv` instead would refuse flags a thread may not
 * take (`--perf-basic-prof`, heap limits) and drop profiling ones (`--cpu-prof`).
 */
const hostEntry = ((): { entry: URL | string; eval: boolean } => {
  if (!import.meta.url.endsWith(".ts")) return { entry: new URL("./pglite-host.js", import.meta.url), eval: false };
  const tsxApi = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm/api")).href;
  const host = new URL("./pglite-host.ts", import.meta.url).href;
  return { entry: `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(host)}); });`, eval: true };
})();

let thread: StoreThread | undefined;

function storeThread(): StoreThread {
  if (!thread?.alive) thread = new StoreThread();
  return thread;
}

/**
 * Ends the process's store thread, as a crash of it would: its databases are gone, waiting
 * requests fail, the next `openPglite` starts a new thread. For tests of exactly that.
 */
export async function stopStoreThread(): Promise<void> {
  await thread?.stop();
}

/**
 * The slice of PGlite's interface drizzle's PGlite session calls (drizzle-orm 0.45
 * pglite/session.js: `query(text, params, { rowMode, parsers })` and `transaction(fn)`, whose
 * `fn` gets an object with `query`). drizzle's `parsers` keep date/time types as text; the
 * thread's client has the same parsers set (pglite-host.ts), so they stay behind.
 */
type DrizzleClient = Pick<PGlite, "query" | "transaction">;

function drizzleClient(thread: StoreThread, db: number): DrizzleClient {
  const query = (tx: number | undefined) =>
    (<T>(sql: string, params: unknown[] = [], options?: QueryOptions): Promise<Results<T>> =>
      thread.call({ op: "query", db, tx, sql, params, rowMode: options?.rowMode ?? "object" }) as Promise<Results<T>>);
  return {
    query: query(undefined),
    async transaction<T>(body: (tx: Transaction) => Promise<T>): Promise<T> {
      const tx = (await thread.call({ op: "begin", db })) as number;
      let result: T;
      try {
        result = await body({ query: query(tx) } as Transaction);
      } catch (e) {
        // The body's error is the one to report, even when the rollback fails too (the thread died).
        await thread.call({ op: "end", db, tx, commit: false }).catch(() => undefined);
        throw e;
      }
      await thread.call({ op: "end", db, tx, commit: true });
      return result;
    },
  };
}

/** Opens (creating if needed) the database at `dataDir`, or an in-memory one, and migrates it. */
export async function openPglite(dataDir: string | undefined): Promise<OpenedDatabase> {
  const t = storeThread();
  const handle = (await t.call({ op: "open", dataDir })) as number;
  const db = drizzle({ client: drizzleClient(t, handle) as PGlite });
  const close = async () => {
    await t.call({ op: "close", db: handle });
  };
  const config = migrationConfig();
  try {
    await migrate(db, config);
  } catch (e) {
    await close();
    throw e;
  }
  return {
    db,
    migrationConfig: config,
    query: (text, params) => t.call({ op: "prepared", db: handle, text, params }) as Promise<{ rows: unknown[] }>,
    close,
  };
}
