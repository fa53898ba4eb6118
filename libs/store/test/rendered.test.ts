/**
 * The per-turn statements rendered once (README "Hot statements rendered once") against the
 * drizzle calls they replaced, on both drivers: rows written by one are read back by the other
 * and must come out identical (every column type: text, integer, boolean, jsonb, bytea,
 * timestamptz at microsecond precision under a non-UTC session time zone), blobs put in batches
 * of every size with repeats, and each fenced write refused by the fence it was given.
 */
import { createHash, randomUUID } from "node:crypto";
import { and, asc, desc, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDrizzleStore } from "../src/drizzle-store.js";
import type { OpenedDatabase } from "../src/drivers/opened.js";
import { openPglite } from "../src/drivers/pglite.js";
import { openPostgres } from "../src/drivers/postgres.js";
import { isStoreError, type Store } from "../src/index.js";
import { blobs, checkpoints, conversations, history, runFences } from "../src/schema.js";
import { dropSchemas, startTestPostgres, uniqueSchema, type TestPostgres } from "./postgres.js";

/** A time zone with a half-hour offset, so timestamps come back as text like `…+05:30`. */
const ZONE = "Asia/Kolkata";

let server: Promise<TestPostgres> | undefined;
const schema = uniqueSchema("store_rendered");
afterAll(async () => {
  if (server === undefined) return;
  const { url, stop } = await server;
  await dropSchemas(url, [schema]);
  await stop();
});

const drivers: [string, () => Promise<OpenedDatabase>][] = [
  [
    "pglite",
    async () => {
      const opened = await openPglite(undefined);
      // One connection: the setting holds for every later statement, drizzle's and rendered.
      await opened.query(`set time zone '${ZONE}'`, []);
      return opened;
    },
  ],
  [
    "postgres",
    async () => {
      const { url } = await (server ??= startTestPostgres());
      const u = new URL(url);
      u.searchParams.set("options", `-c timezone=${ZONE}`);
      return openPostgres({ url: u.toString(), schema });
    },
  ],
];

describe.each(drivers)("rendered statements vs drizzle: %s", (_name, open) => {
  let opened: OpenedDatabase;
  let store: Store;
  beforeAll(async () => {
    opened = await open();
    store = createDrizzleStore(opened);
  });
  afterAll(async () => {
    await store?.close();
  });
  const ids = () => ({ tenant: `t-${randomUUID()}`, conv: `c-${randomUUID()}` });
  const MICROS = sql`'2024-02-29 23:59:59.987654+00'::timestamptz`;

  it("runs under the non-UTC session time zone", async () => {
    const { rows } = await opened.query("select current_setting('TimeZone') as tz, now()::text as now", []);
    expect(rows[0]).toMatchObject({ tz: ZONE });
    expect((rows[0] as { now: string }).now).toMatch(/\+05:30$/);
  });

  it("history: rows drizzle wrote read back by listHistory as drizzle reads them", async () => {
    const { tenant, conv } = ids();
    await opened.db.insert(history).values([
      { tenantId: tenant, conversationId: conv, seq: 0, requestId: "r", generation: 2, turn: 3, kind: "user", body: { text: "é ☃ \"q\" \\ \t 𝄞", n: [1, 2.5, null, true], deep: { a: { b: [] } } }, dedupeKey: "k", interrupted: true, createdAt: MICROS },
      { tenantId: tenant, conversationId: conv, seq: 1, requestId: "r", generation: 2, turn: 3, kind: "assistant", body: "a bare string", dedupeKey: null, interrupted: false },
      { tenantId: tenant, conversationId: conv, seq: 2, requestId: "r2", generation: 1, turn: 4, kind: "tool", body: [1, { x: 9007199254740991 }], dedupeKey: null, interrupted: false },
    ]);
    const viaDrizzle = await opened.db.select().from(history).where(and(eq(history.tenantId, tenant), eq(history.conversationId, conv))).orderBy(asc(history.seq));
    const listed = await store.listHistory(tenant, conv);
    expect(listed).toStrictEqual(viaDrizzle.map(({ dedupeKey: _k, ...e }) => e));
    expect(listed[0]!.createdAt.toISOString()).toBe("2024-02-29T23:59:59.987Z");
    for (const e of listed) expect(e.createdAt).toBeInstanceOf(Date);
  });

  it("history: rows the rendered append wrote read back by drizzle as the append returned them", async () => {
    const { tenant, conv } = ids();
    const appended = await store.appendHistory([
      { tenantId: tenant, conversationId: conv, requestId: "r", generation: 1, turn: 0, kind: "user", body: { text: "hi", dedupeKey: "u" }, interrupted: false },
      { tenantId: tenant, conversationId: conv, requestId: "r", generation: 1, turn: 0, kind: "assistant", body: { text: "yo" }, interrupted: true },
    ]);
    const viaDrizzle = await opened.db.select().from(history).where(and(eq(history.tenantId, tenant), eq(history.conversationId, conv))).orderBy(asc(history.seq));
    expect(appended).toStrictEqual(viaDrizzle.map(({ dedupeKey: _k, ...e }) => e));
    expect(await store.listHistory(tenant, conv)).toStrictEqual(appended);
  });

  it("checkpoints: every byte value and a large state, either way, as a plain Uint8Array", async () => {
    const { tenant, conv } = ids();
    const allBytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    await opened.db.insert(checkpoints).values({ tenantId: tenant, conversationId: conv, requestId: "r", generation: 7, state: allBytes, createdAt: MICROS });
    const drizzleLatest = async () => {
      const [row] = await opened.db.select().from(checkpoints).where(and(eq(checkpoints.tenantId, tenant), eq(checkpoints.conversationId, conv))).orderBy(desc(checkpoints.id)).limit(1);
      const { id: _id, ...record } = row!;
      return record;
    };
    const first = await store.latestCheckpoint(tenant, conv);
    expect(first).toStrictEqual(await drizzleLatest());
    expect(first!.state.constructor).toBe(Uint8Array);
    expect(first!.createdAt.toISOString()).toBe("2024-02-29T23:59:59.987Z");

    const large = new Uint8Array(100_000).map((_, i) => (i * 31) % 256);
    await store.saveCheckpoint({ tenantId: tenant, conversationId: conv, requestId: "r2", generation: 8, state: large });
    const second = await store.latestCheckpoint(tenant, conv);
    expect(second).toStrictEqual(await drizzleLatest());
    expect(second).toMatchObject({ requestId: "r2", generation: 8 });
    expect(second!.state.constructor).toBe(Uint8Array);
    expect(Buffer.from(second!.state).equals(Buffer.from(large))).toBe(true);
    // A Buffer given to the store is stored as its bytes only (not its pool slab).
    const slab = Buffer.alloc(64, 0xee);
    await store.saveCheckpoint({ tenantId: tenant, conversationId: conv, requestId: "r3", generation: 9, state: slab.subarray(8, 12).fill(1) }, { requestId: "r3", generation: 9, epoch: 1 });
    expect(Array.from((await store.latestCheckpoint(tenant, conv))!.state)).toEqual([1, 1, 1, 1]);
  });

  it("conversations: the rendered touch merges into a row drizzle wrote, as drizzle reads it", async () => {
    const { tenant, conv } = ids();
    await opened.db.insert(conversations).values({ tenantId: tenant, conversationId: conv, meta: { keep: { nested: [1, "x"] }, replace: 1 }, createdAt: MICROS, updatedAt: MICROS });
    expect(await store.listHistory(tenant, conv, { replace: { now: "an object" }, added: null })).toEqual([]);
    const touched = await store.getConversation(tenant, conv);
    expect(touched?.meta).toStrictEqual({ keep: { nested: [1, "x"] }, replace: { now: "an object" }, added: null });
    expect(touched?.createdAt.toISOString()).toBe("2024-02-29T23:59:59.987Z");
    expect(touched!.updatedAt.getTime()).toBeGreaterThan(touched!.createdAt.getTime());
    // A new conversation, an empty touch: created with {}.
    const { conv: fresh } = ids();
    await store.listHistory(tenant, fresh, {});
    expect((await store.getConversation(tenant, fresh))?.meta).toStrictEqual({});
  });

  describe("putBlobs", () => {
    const sha256 = (d: Uint8Array) => new Uint8Array(createHash("sha256").update(d).digest());
    const put = (data: Uint8Array) => ({ id: sha256(data), data });
    const stored = async (tenant: string) =>
      (await opened.db.select().from(blobs).where(eq(blobs.tenantId, tenant))).map((r) => [Buffer.from(r.blobId).toString("hex"), Buffer.from(r.data).toString("hex")]).sort();
    const expected = (datas: Uint8Array[]) => [...new Map(datas.map((d) => [Buffer.from(sha256(d)).toString("hex"), Buffer.from(d).toString("hex")]))].sort();

    it.each([1, 2, 3, 64])("stores %i blobs in one put, each readable by getBlob and by drizzle", async (n) => {
      const { tenant } = ids();
      const datas = Array.from({ length: n }, (_, i) => Uint8Array.from({ length: i * 7 + (i === 0 ? 0 : 1) }, (_, j) => (i + j * 13) % 256));
      await store.putBlobs(tenant, datas.map(put));
      expect(await stored(tenant)).toEqual(expected(datas));
      for (const d of datas) {
        const got = await store.getBlobs(tenant, [sha256(d)]).then(([b]) => b);
        expect(got?.constructor).toBe(Uint8Array);
        expect(Buffer.from(got!).equals(Buffer.from(d))).toBe(true);
      }
    });

    it("skips repeats within a put and blobs already stored (another tenant's copy is its own)", async () => {
      const { tenant } = ids();
      const other = `${tenant}-other`;
      const [a, b, c] = [new Uint8Array([1]), new Uint8Array(300_000).fill(7), Uint8Array.from({ length: 256 }, (_, i) => 255 - i)];
      await store.putBlobs(other, [put(a)]);
      await store.putBlobs(tenant, [put(a), put(a), put(b)]);
      expect(await stored(tenant)).toEqual(expected([a, b]));
      await store.putBlobs(tenant, [put(b), put(c), put(a), put(c)]);
      expect(await stored(tenant)).toEqual(expected([a, b, c]));
      expect(await stored(other)).toEqual(expected([a]));
    });

    it("reads blobs drizzle wrote, and drizzle reads blobs it wrote, the same", async () => {
      const { tenant } = ids();
      const d = Uint8Array.from({ length: 1000 }, (_, i) => i % 256);
      await opened.db.insert(blobs).values({ tenantId: tenant, blobId: sha256(d), data: d });
      await store.putBlobs(tenant, [put(d)]); // a no-op over drizzle's row
      expect(await stored(tenant)).toEqual(expected([d]));
    });
  });

  describe("fences", () => {
    const epochOf = async (tenant: string, requestId: string) =>
      (await opened.db.select({ epoch: runFences.epoch }).from(runFences).where(and(eq(runFences.tenantId, tenant), eq(runFences.requestId, requestId))))[0]?.epoch;

    it("claimRun: raises the epoch, re-claims the same, refuses a lower one without lowering it", async () => {
      const { tenant } = ids();
      expect(await store.claimRun(tenant, { requestId: "r", generation: 1, epoch: 2 })).toBe(true);
      expect(await store.claimRun(tenant, { requestId: "r", generation: 1, epoch: 2 })).toBe(true);
      expect(await store.claimRun(tenant, { requestId: "r", generation: 1, epoch: 1 })).toBe(false);
      expect(await epochOf(tenant, "r")).toBe(2);
      expect(await store.claimRun(tenant, { requestId: "r", generation: 1, epoch: 5 })).toBe(true);
      expect(await epochOf(tenant, "r")).toBe(5);
      // Another generation of the same request is a fence of its own.
      expect(await store.claimRun(tenant, { requestId: "r", generation: 2, epoch: 1 })).toBe(true);
    });

    it("saveCheckpoint: refused by the fence it is given (its ids, not the checkpoint's), writing nothing", async () => {
      const { tenant, conv } = ids();
      await store.claimRun(tenant, { requestId: "fenced-req", generation: 3, epoch: 2 });
      const save = (requestId: string, generation: number, fence: { requestId: string; generation: number; epoch: number }) =>
        store.saveCheckpoint({ tenantId: tenant, conversationId: conv, requestId, generation, state: new Uint8Array([generation]) }, fence).then(() => undefined, (e: unknown) => e);
      // The checkpoint names another request and generation; the fence is what decides.
      expect(isStoreError(await save("free-req", 1, { requestId: "fenced-req", generation: 3, epoch: 1 }), "fenced")).toBe(true);
      expect(await store.latestCheckpoint(tenant, conv)).toBeUndefined();
      expect(await save("fenced-req", 3, { requestId: "free-req", generation: 1, epoch: 1 })).toBeUndefined();
      expect(await save("fenced-req", 3, { requestId: "fenced-req", generation: 1, epoch: 1 })).toBeUndefined();
      expect(await save("fenced-req", 3, { requestId: "fenced-req", generation: 3, epoch: 2 })).toBeUndefined();
      expect((await store.latestCheckpoint(tenant, conv))?.requestId).toBe("fenced-req");
      // Another tenant's claim of the same ids fences nothing here.
      await store.claimRun(`${tenant}-other`, { requestId: "x", generation: 1, epoch: 9 });
      expect(await save("x", 1, { requestId: "x", generation: 1, epoch: 1 })).toBeUndefined();
    });
  });
});

/**
 * Both drivers run `query` texts as named prepared statements (drivers/opened.ts
 * `statementNames`): one prepare per text and connection, every later call only binds, and a
 * failing call leaves the statement usable. PGlite's runs under its locks, so it never lands
 * inside a transaction another caller has open.
 */
describe.each([
  ["pglite", () => openPglite(undefined)],
  // One connection, so the prepared statements seen are the ones the calls used.
  ["postgres", async () => openPostgres({ url: (await (server ??= startTestPostgres())).url, schema, maxConnections: 1 })],
] as const)("prepared statements: %s", (_name, open) => {
  let opened: OpenedDatabase;
  beforeAll(async () => {
    opened = await open();
  });
  afterAll(async () => {
    await opened?.close();
  });

  it("prepares each text once, binds it with each call's parameters, and survives a failing call", async () => {
    const text = "select $1::int + 1 as n, $2::text as label";
    expect((await opened.query(text, [1, "a"])).rows).toEqual([{ n: 2, label: "a" }]);
    await expect(opened.query(text, ["not a number", "b"])).rejects.toMatchObject({ code: "22P02" });
    expect((await opened.query(text, [41, null])).rows).toEqual([{ n: 42, label: null }]);
    const { rows } = await opened.query("select name from pg_prepared_statements where statement = $1", [text]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toEqual({ name: expect.stringMatching(/^byok_s\d+$/) });
  });

  it("a bad statement is reported on every call, and nothing of it is kept", async () => {
    await expect(opened.query("select from no_such_table_here", [])).rejects.toMatchObject({ code: "42P01" });
    await expect(opened.query("select from no_such_table_here", [])).rejects.toMatchObject({ code: "42P01" });
    expect((await opened.query("select 1 as one", [])).rows).toEqual([{ one: 1 }]);
  });

  it("waits for a transaction another caller has open instead of running inside it", async () => {
    const table = `prep_tx_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
    await opened.db.execute(sql.raw(`create table ${table} (v int)`));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let inserted!: () => void;
    const insertedOnce = new Promise<void>((r) => (inserted = r));
    const tx = opened.db.transaction(async (t) => {
      await t.execute(sql.raw(`insert into ${table} values (1)`));
      inserted();
      await held;
      throw new Error("rolled back");
    });
    await insertedOnce;
    // Issued while the transaction is open: were it inside, it would see the uncommitted row.
    const count = opened.query(`select count(*)::int as n from ${table}`, []);
    release();
    await expect(tx).rejects.toThrow("rolled back");
    expect((await count).rows).toEqual([{ n: 0 }]);
    await opened.db.execute(sql.raw(`drop table ${table}`));
  });
});
