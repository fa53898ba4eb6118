/**
 * The embedded store's thread (docs/architecture.md "The embedded store's thread"): PGlite's
 * statements run off the event loop; drizzle's transactions commit, roll back and hold others
 * out across the thread; errors keep their SQLSTATE; the process exits with a database left open;
 * a thread that dies fails what waits on it and the next open starts a new one.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenedDatabase } from "../src/drivers/opened.js";
import { openPglite, stopStoreThread } from "../src/drivers/pglite.js";

const rows = async (db: OpenedDatabase, text: string, params: unknown[] = []) => (await db.query(text, params)).rows;

describe("the embedded store's thread", () => {
  let db: OpenedDatabase;
  beforeAll(async () => {
    db = await openPglite(undefined);
    await db.query("create table thread_t (id int primary key, v text)", []);
  });
  afterAll(async () => {
    await db?.close();
  });

  it("runs a long statement while the event loop keeps turning", async () => {
    let turns = 0;
    let running = true;
    const spin = () => {
      turns++;
      if (running) setImmediate(spin);
    };
    setImmediate(spin);
    // Hundreds of milliseconds of WASM work; on the calling thread no setImmediate would run until it returned.
    const [r] = await rows(db, "select count(*)::int as n from generate_series(1, 3000000) g where g % 7 = 0");
    running = false;
    expect(r).toEqual({ n: 428571 });
    expect(turns).toBeGreaterThan(20);
  });

  it("commits a drizzle transaction, and rolls one back that throws, leaving the database serving", async () => {
    await db.db.transaction(async (tx) => {
      await tx.execute(sql`insert into thread_t values (1, 'kept')`);
    });
    const boom = new Error("the body failed");
    await expect(
      db.db.transaction(async (tx) => {
        await tx.execute(sql`insert into thread_t values (2, 'dropped')`);
        throw boom;
      }),
    ).rejects.toBe(boom);
    // A nested transaction (a savepoint) rolled back alone.
    await db.db.transaction(async (tx) => {
      await tx.execute(sql`insert into thread_t values (3, 'outer')`);
      await expect(tx.transaction(async (inner) => {
        await inner.execute(sql`insert into thread_t values (4, 'inner')`);
        inner.rollback();
      })).rejects.toThrow(/rollback/i);
    });
    expect(await rows(db, "select id, v from thread_t order by id")).toEqual([{ id: 1, v: "kept" }, { id: 3, v: "outer" }]);
  });

  it("holds other statements out of an open transaction until it ends", async () => {
    const order: string[] = [];
    let outside: Promise<unknown> | undefined;
    await db.db.transaction(async (tx) => {
      await tx.execute(sql`insert into thread_t values (10, 'in tx')`);
      outside = rows(db, "select count(*)::int as n from thread_t where id = 10").then((r) => {
        order.push("outside");
        return r;
      });
      await new Promise((r) => setTimeout(r, 50));
      await tx.execute(sql`update thread_t set v = 'still in tx' where id = 10`);
      order.push("body done");
    });
    expect(await outside).toEqual([{ n: 1 }]);
    expect(order).toEqual(["body done", "outside"]);
  });

  it("keeps a PostgreSQL error's SQLSTATE and constraint across the thread", async () => {
    await db.query("insert into thread_t values (20, 'first')", []);
    const fromRendered = await db.query("insert into thread_t values (20, 'again')", []).catch((e: unknown) => e);
    expect(fromRendered).toBeInstanceOf(Error);
    expect(fromRendered).toMatchObject({ code: "23505", constraint: "thread_t_pkey" });
    const fromDrizzle = await db.db.execute(sql`insert into thread_t values (20, 'again')`).catch((e: unknown) => e);
    expect(fromDrizzle).toBeInstanceOf(Error);
    expect((fromDrizzle as Error).cause).toMatchObject({ code: "23505" });
    expect(await rows(db, "select v from thread_t where id = 20")).toEqual([{ v: "first" }]);
  });

  it("refuses a parameter that cannot cross the thread, and keeps serving", async () => {
    await expect(db.query("select $1::text as v", [() => "a function"])).rejects.toThrow(/could not be cloned/);
    expect(await rows(db, "select $1::text as v", ["plain"])).toEqual([{ v: "plain" }]);
  });

  it("passes bytea and jsonb both ways", async () => {
    await db.query("create table thread_b (b bytea, j jsonb)", []);
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    await db.query("insert into thread_b values ($1, $2)", [bytes, JSON.stringify({ a: [1, "x", null] })]);
    const [r] = await rows(db, "select b, j from thread_b");
    expect(r).toEqual({ b: bytes, j: { a: [1, "x", null] } });
  });
});

describe("the store thread's life", () => {
  it("fails what waits on a thread that dies, and the next open starts a new one", async () => {
    const db = await openPglite(undefined);
    const waiting = db.query("select count(*) from generate_series(1, 5000000)", []);
    await stopStoreThread();
    await expect(waiting).rejects.toThrow(/embedded database thread exited/);
    await expect(db.query("select 1 as one", [])).rejects.toThrow(/embedded database thread exited/);
    const again = await openPglite(undefined);
    try {
      expect((await again.query("select 1 as one", [])).rows).toEqual([{ one: 1 }]);
    } finally {
      await again.close();
    }
  });

  // Started with flags operators set (a heap limit, a V8 option): the thread inherits them; given
  // as a Worker's execArgv, Node refuses both and the gateway would not start.
  it("lets a process exit with a database it never closed, whatever flags it was started with", async () => {
    const driver = fileURLToPath(new URL("../src/drivers/pglite.ts", import.meta.url));
    const script = `const { openPglite } = await import(${JSON.stringify(driver)});
const db = await openPglite(undefined);
// A call refused before it reached the thread holds nothing open either.
await db.query("select $1::text", [() => 0]).catch(() => undefined);
const { rows } = await db.query("select 41 + 1 as answer", []);
console.log(JSON.stringify(rows));`;
    const dir = mkdtempSync(join(tmpdir(), "byok-thread-exit-"));
    const file = join(dir, "open-and-leave.mjs");
    writeFileSync(file, script);
    const child = spawn(process.execPath, ["--max-old-space-size=512", "--stack-trace-limit=50", "--import", "tsx", file], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const kill = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    clearTimeout(kill);
    expect(code).toBe(0);
    rmSync(dir, { recursive: true, force: true });
    expect(out.trim()).toBe('[{"answer":42}]');
  });
});
