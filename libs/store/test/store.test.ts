/**
 * Runs the Store contract against every driver, then the checks only one driver can make
 * (persistence across reopen, several pools on one schema).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStore, isStoreError, knownMigrations, type Store } from "../src/index.js";
import { storeContract } from "./contract.js";
import { dropSchemas, startTestPostgres, uniqueSchema, type TestPostgres } from "./postgres.js";

describe("pglite, in memory", () => {
  storeContract("pglite in-memory", () => createStore({ driver: "pglite" }));
});

describe("pglite, data dir", () => {
  const dirs: string[] = [];
  const newDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), "byok-store-"));
    dirs.push(dir);
    return dir;
  };
  afterAll(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  storeContract("pglite data dir", async () => createStore({ driver: "pglite", dataDir: await newDir() }));

  it("keeps everything across close and reopen, without re-running migrations", async () => {
    const dataDir = await newDir();
    const first = await createStore({ driver: "pglite", dataDir });
    await writeSample(first);
    await first.close();

    const reopened = await createStore({ driver: "pglite", dataDir });
    try {
      await expectSample(reopened);
      expect(await reopened.migrations()).toEqual(knownMigrations());
    } finally {
      await reopened.close();
    }
  });
});

describe("postgres", () => {
  const schema = uniqueSchema();
  const extraSchemas: string[] = [];
  // Started once for the file; the contract's factory and the checks below share it.
  let server: Promise<TestPostgres> | undefined;
  const postgres = () => (server ??= startTestPostgres());
  const open = async (s = schema) => createStore({ driver: "postgres", url: (await postgres()).url, schema: s });

  afterAll(async () => {
    if (server === undefined) return;
    const { url, stop } = await server;
    await dropSchemas(url, [schema, ...extraSchemas]);
    await stop();
  });

  storeContract(`postgres (schema ${schema})`, () => open());

  it("keeps everything across close and reopen, without re-running migrations", async () => {
    const first = await open();
    await writeSample(first);
    await first.close();
    const reopened = await open();
    try {
      await expectSample(reopened);
      expect(await reopened.migrations()).toEqual(knownMigrations());
    } finally {
      await reopened.close();
    }
  });

  it("migrates a fresh schema once when several stores start together", async () => {
    const fresh = uniqueSchema();
    extraSchemas.push(fresh);
    const stores = await Promise.all([open(fresh), open(fresh), open(fresh)]);
    try {
      for (const s of stores) expect(await s.migrations()).toEqual(knownMigrations());
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("keeps seqs contiguous when appenders use different pools", async () => {
    const stores = await Promise.all([open(), open()]);
    try {
      const tenant = `t-${randomUUID()}`;
      const conv = `c-${randomUUID()}`;
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          stores[i % 2]!.appendHistory([
            { tenantId: tenant, conversationId: conv, requestId: "r", generation: 1, turn: i, kind: "user", body: {}, interrupted: false },
          ]),
        ),
      );
      const seqs = (await stores[0]!.listHistory(tenant, conv)).map((e) => e.seq);
      expect(seqs).toEqual(Array.from({ length: 20 }, (_, i) => i));
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("confines tables to the given schema", async () => {
    const other = uniqueSchema();
    extraSchemas.push(other);
    const a = await open();
    const b = await open(other);
    try {
      await a.upsertConversation("t", "only-in-a");
      expect(await b.getConversation("t", "only-in-a")).toBeUndefined();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("rejects a schema name it cannot quote safely", async () => {
    const err = await createStore({ driver: "postgres", url: (await postgres()).url, schema: 'x"; drop' }).catch(
      (e: unknown) => e,
    );
    expect(isStoreError(err, "invalid_argument")).toBe(true);
  });
});

const SAMPLE = { tenant: "persist-tenant", conv: "persist-conv", blob: new Uint8Array([1, 2, 3]) };

async function writeSample(store: Store): Promise<void> {
  await store.upsertConversation(SAMPLE.tenant, SAMPLE.conv, { mode: "agent" });
  await store.appendHistory([
    { tenantId: SAMPLE.tenant, conversationId: SAMPLE.conv, requestId: "r", generation: 1, turn: 0, kind: "user", body: { text: "hi" }, interrupted: false },
  ]);
  await store.saveCheckpoint({ tenantId: SAMPLE.tenant, conversationId: SAMPLE.conv, requestId: "r", generation: 1, state: new Uint8Array([7]) });
  await store.putBlob(SAMPLE.tenant, createHash("sha256").update(SAMPLE.blob).digest(), SAMPLE.blob);
}

async function expectSample(store: Store): Promise<void> {
  expect((await store.getConversation(SAMPLE.tenant, SAMPLE.conv))?.meta).toEqual({ mode: "agent" });
  expect((await store.listHistory(SAMPLE.tenant, SAMPLE.conv)).map((e) => e.body)).toEqual([{ text: "hi" }]);
  expect(Array.from((await store.latestCheckpoint(SAMPLE.tenant, SAMPLE.conv))?.state ?? [])).toEqual([7]);
  const blob = await store.getBlob(SAMPLE.tenant, createHash("sha256").update(SAMPLE.blob).digest());
  expect(Array.from(blob ?? [])).toEqual([1, 2, 3]);
}
