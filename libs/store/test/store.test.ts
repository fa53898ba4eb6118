/**
 * Runs the Store contract against every driver, then the checks only one driver can make
 * (persistence across reopen, several pools on one schema).
 */
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAesGcmKek, createStore, isStoreError, knownMigrations, type Store } from "../src/index.js";
import { storeContract } from "./contract.js";
import { credentialKekContract, tenancyContract } from "./tenancy-contract.js";
import { dropSchemas, startTestPostgres, uniqueSchema, type TestPostgres } from "./postgres.js";

const kek = createAesGcmKek(randomBytes(32));

describe("pglite, in memory", () => {
  storeContract("pglite in-memory", () => createStore({ driver: "pglite" }));
  tenancyContract("pglite in-memory", () => createStore({ driver: "pglite", kek }));
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
  tenancyContract("pglite data dir", async () => createStore({ driver: "pglite", dataDir: await newDir(), kek }));
  let kekDir: Promise<string> | undefined;
  credentialKekContract("pglite data dir", async (k) => createStore({ driver: "pglite", dataDir: await (kekDir ??= newDir()), kek: k }));

  it("writes no credential plaintext to any file of the data dir", async () => {
    const dataDir = await newDir();
    const secret = `sk-plaintext-probe-${randomBytes(12).toString("hex")}`;
    const store = await createStore({ driver: "pglite", dataDir, kek });
    await store.credentials.put("t", "openai", { kind: "api_key", apiKey: secret });
    expect(await store.credentials.get("t", "openai")).toEqual({ kind: "api_key", apiKey: secret });
    await store.close();
    const files = await listFiles(dataDir);
    expect(files.length).toBeGreaterThan(10);
    for (const f of files) {
      const bytes = await readFile(f);
      expect(bytes.includes(Buffer.from(secret)), f).toBe(false);
      expect(bytes.includes(Buffer.from("sk-plaintext-probe")), f).toBe(false);
    }
  });

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
  tenancyContract(`postgres (schema ${schema})`, async () =>
    createStore({ driver: "postgres", url: (await postgres()).url, schema, kek }),
  );
  credentialKekContract(`postgres (schema ${schema})`, async (k) =>
    createStore({ driver: "postgres", url: (await postgres()).url, schema, kek: k }),
  );

  it("holds no credential plaintext in the credentials table (every column, as bytes)", async () => {
    const secret = `sk-plaintext-probe-${randomBytes(12).toString("hex")}`;
    const store = await createStore({ driver: "postgres", url: (await postgres()).url, schema, kek });
    const tenant = `t-${randomUUID()}`;
    try {
      await store.credentials.put(tenant, "openai", { kind: "api_key", apiKey: secret });
      expect(await store.credentials.get(tenant, "openai")).toEqual({ kind: "api_key", apiKey: secret });
    } finally {
      await store.close();
    }
    const client = new pg.Client({ connectionString: (await postgres()).url });
    await client.connect();
    try {
      const { rows } = await client.query<{ raw: string; ciphertext: Buffer }>(
        `select t::text as raw, t.ciphertext from "${schema}".provider_credentials t where tenant_id = $1`,
        [tenant],
      );
      expect(rows).toHaveLength(1);
      for (const r of rows) {
        expect(r.raw).not.toContain(secret);
        expect(r.raw).not.toContain(Buffer.from(secret).toString("hex"));
        expect(r.ciphertext.includes(Buffer.from(secret))).toBe(false);
      }
    } finally {
      await client.end();
    }
  });

  it("prunes a tenant's day-old run fences at a store's first claim for it, then not at every claim", async () => {
    const tenant = `t-${randomUUID()}`;
    const client = new pg.Client({ connectionString: (await postgres()).url });
    await client.connect();
    const old = (requestId: string) =>
      client.query(`insert into "${schema}".run_fences (tenant_id, request_id, generation, epoch, claimed_at) values ($1, $2, 1, 1, now() - interval '2 days')`, [tenant, requestId]);
    const fences = async () =>
      (await client.query<{ request_id: string }>(`select request_id from "${schema}".run_fences where tenant_id = $1 order by request_id`, [tenant])).rows.map((r) => r.request_id);
    const first = await open();
    const second = await open();
    try {
      await old("old-1");
      expect(await first.claimRun(tenant, { requestId: "new-1", generation: 1, epoch: 1 })).toBe(true);
      expect(await fences()).toEqual(["new-1"]);
      // The same store's next claim leaves a day-old fence for its next prune ...
      await old("old-2");
      expect(await first.claimRun(tenant, { requestId: "new-2", generation: 1, epoch: 1 })).toBe(true);
      expect(await fences()).toEqual(["new-1", "new-2", "old-2"]);
      // ... and another store (process) prunes at its own first claim.
      expect(await second.claimRun(tenant, { requestId: "new-3", generation: 1, epoch: 1 })).toBe(true);
      expect(await fences()).toEqual(["new-1", "new-2", "new-3"]);
    } finally {
      await client.end();
      await first.close();
      await second.close();
    }
  });

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

  it("appends after a row an older gateway wrote without raising next_seq (a rolling upgrade)", async () => {
    const store = await open();
    const client = new pg.Client({ connectionString: (await postgres()).url });
    await client.connect();
    try {
      const tenant = `t-${randomUUID()}`;
      const conv = `c-${randomUUID()}`;
      const entry = { tenantId: tenant, conversationId: conv, requestId: "r", generation: 1, turn: 0, kind: "user", body: {}, interrupted: false };
      await store.appendHistory([entry]);
      // What a gateway from before migration 0006 does: the next seq from max(seq), the counter untouched.
      await client.query(
        `insert into "${schema}".history (tenant_id, conversation_id, seq, request_id, generation, turn, kind, body) values ($1, $2, 1, 'old', 1, 0, 'user', '{}')`,
        [tenant, conv],
      );
      const [appended] = await store.appendHistory([entry]);
      expect(appended?.seq).toBe(2);
      expect((await store.listHistory(tenant, conv)).map((e) => [e.seq, e.requestId])).toEqual([[0, "r"], [1, "old"], [2, "r"]]);
    } finally {
      await client.end();
      await store.close();
    }
  });

  it("confines tables to the given schema", async () => {
    const other = uniqueSchema();
    extraSchemas.push(other);
    const a = await open();
    const b = await open(other);
    try {
      await a.listHistory("t", "only-in-a", {});
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
  await store.listHistory(SAMPLE.tenant, SAMPLE.conv, { mode: "agent" });
  await store.appendHistory([
    { tenantId: SAMPLE.tenant, conversationId: SAMPLE.conv, requestId: "r", generation: 1, turn: 0, kind: "user", body: { text: "hi" }, interrupted: false },
  ]);
  await store.saveCheckpoint({ tenantId: SAMPLE.tenant, conversationId: SAMPLE.conv, requestId: "r", generation: 1, state: new Uint8Array([7]) });
  await store.putBlobs(SAMPLE.tenant, [{ id: createHash("sha256").update(SAMPLE.blob).digest(), data: SAMPLE.blob }]);
}

async function expectSample(store: Store): Promise<void> {
  expect((await store.getConversation(SAMPLE.tenant, SAMPLE.conv))?.meta).toEqual({ mode: "agent" });
  expect((await store.listHistory(SAMPLE.tenant, SAMPLE.conv)).map((e) => e.body)).toEqual([{ text: "hi" }]);
  expect(Array.from((await store.latestCheckpoint(SAMPLE.tenant, SAMPLE.conv))?.state ?? [])).toEqual([7]);
  const blob = await store.getBlobs(SAMPLE.tenant, [createHash("sha256").update(SAMPLE.blob).digest()]).then(([b]) => b);
  expect(Array.from(blob ?? [])).toEqual([1, 2, 3]);
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    if ((await stat(path)).isDirectory()) out.push(...(await listFiles(path)));
    else out.push(path);
  }
  return out;
}
