/**
 * The ephemeral content store (ghost mode, retention metadata/none) runs the Store contract for
 * what it holds, then the checks of what it is for: nothing of the run reaches the database,
 * earlier stored rows are read and continued, and what it holds survives a takeover.
 */
import { createHash, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contentStore, createStore, type ContentMode, type NewHistoryEntry, type Store } from "../src/index.js";
import { storeContract } from "./contract.js";

const ephemeralOn = (mode: ContentMode) => async () => contentStore(await createStore({ driver: "pglite" }), mode).store;

storeContract("ephemeral (retention none)", ephemeralOn("ephemeral"), { conversationRows: false, durableHistory: false, checkpoints: false, fences: false });
storeContract("ephemeral, conversation kept (retention metadata)", ephemeralOn("ephemeral_keep_conversation"), { conversationRows: true, durableHistory: false, checkpoints: false, fences: false });

describe("ephemeral content store over a database store", () => {
  let db: Store;
  beforeAll(async () => {
    db = await createStore({ driver: "pglite" });
  });
  afterAll(async () => {
    await db.close();
  });

  const sha256 = (d: Uint8Array) => new Uint8Array(createHash("sha256").update(d).digest());
  const ids = () => ({ tenant: `t-${randomUUID()}`, conv: `c-${randomUUID()}` });
  const entry = (tenantId: string, conversationId: string, over: Partial<NewHistoryEntry> = {}): NewHistoryEntry => ({
    tenantId, conversationId, requestId: "r", generation: 1, turn: 0, kind: "assistant", body: { text: "held" }, interrupted: false, ...over,
  });

  it.each([["ephemeral" as const], ["ephemeral_keep_conversation" as const]])("%s: writes no history, checkpoint or blob to the database", async (mode) => {
    const { tenant, conv } = ids();
    const { store } = contentStore(db, mode);
    const blob = new Uint8Array([9, 9]);
    expect(await store.listHistory(tenant, conv, { mode: "agent" })).toEqual([]);
    const carried = new Uint8Array([8, 8]);
    await store.appendHistory([entry(tenant, conv)], undefined, { blobs: [{ id: sha256(carried), data: carried }] });
    await store.saveCheckpoint({ tenantId: tenant, conversationId: conv, requestId: "r", generation: 1, state: new Uint8Array([1]) });
    await store.putBlobs(tenant, [{ id: sha256(blob), data: blob }]);
    expect(await store.listHistory(tenant, conv)).toHaveLength(1);
    expect(Array.from((await store.getBlobs(tenant, [sha256(blob)]).then(([b]) => b))!)).toEqual([9, 9]);
    expect(Array.from((await store.getBlobs(tenant, [sha256(carried)]).then(([b]) => b))!)).toEqual([8, 8]);
    // Held and stored blobs in one read, in the order asked (the stored one from the database).
    const stored = new Uint8Array([7]);
    await db.putBlobs(tenant, [{ id: sha256(stored), data: stored }]);
    const both = await store.getBlobs(tenant, [sha256(stored), sha256(blob), sha256(new Uint8Array([0])), sha256(carried)]);
    expect(both.map((b) => b && Array.from(b))).toEqual([[7], [9, 9], undefined, [8, 8]]);
    // The turn's final checkpoint riding in an append is not kept either.
    await store.appendHistory([entry(tenant, conv, { body: { text: "last" } })], undefined, {
      checkpoint: { tenantId: tenant, conversationId: conv, requestId: "r", generation: 1, state: new Uint8Array([2]) },
    });
    expect(await db.listHistory(tenant, conv)).toEqual([]);
    expect(await db.latestCheckpoint(tenant, conv)).toBeUndefined();
    expect(await db.getBlobs(tenant, [sha256(blob)]).then(([b]) => b)).toBeUndefined();
    expect(await db.getBlobs(tenant, [sha256(carried)]).then(([b]) => b)).toBeUndefined();
    // Retention metadata keeps the conversation row (ids and timestamps); none keeps nothing.
    expect(await db.getConversation(tenant, conv)).toEqual(mode === "ephemeral" ? undefined : expect.objectContaining({ tenantId: tenant, conversationId: conv }));
  });

  it("reads the conversation's stored rows, blobs and checkpoint, and continues their seqs", async () => {
    const { tenant, conv } = ids();
    const blob = new Uint8Array([1, 2, 3]);
    await db.appendHistory([entry(tenant, conv, { kind: "user", body: { text: "stored" } }), entry(tenant, conv, { body: { text: "stored" } })]);
    await db.putBlobs(tenant, [{ id: sha256(blob), data: blob }]);
    await db.saveCheckpoint({ tenantId: tenant, conversationId: conv, requestId: "r0", generation: 1, state: new Uint8Array([7]) });
    const { store } = contentStore(db, "ephemeral");
    const [added] = await store.appendHistory([entry(tenant, conv, { requestId: "r2" })]);
    expect(added?.seq).toBe(2);
    expect((await store.listHistory(tenant, conv)).map((e) => [e.seq, (e.body as { text: string }).text])).toEqual([[0, "stored"], [1, "stored"], [2, "held"]]);
    await store.markInterrupted(tenant, conv, [2]);
    expect((await store.listHistory(tenant, conv)).map((e) => e.interrupted)).toEqual([false, false, true]);
    expect((await db.listHistory(tenant, conv)).map((e) => e.interrupted)).toEqual([false, false]);
    expect(Array.from((await store.getBlobs(tenant, [sha256(blob)]).then(([b]) => b))!)).toEqual([1, 2, 3]);
    expect(Array.from((await store.latestCheckpoint(tenant, conv))!.state)).toEqual([7]);
  });

  it("hands what it holds to a takeover: the new owner lists the same history and re-appends nothing twice", async () => {
    const { tenant, conv } = ids();
    const first = contentStore(db, "ephemeral");
    await first.store.appendHistory([entry(tenant, conv, { kind: "user", body: { dedupeKey: "u" } }), entry(tenant, conv, { body: { dedupeKey: "a" } })]);
    await first.store.markInterrupted(tenant, conv, [1]);
    const taker = contentStore(db, "ephemeral");
    taker.held!.adopt(JSON.parse(JSON.stringify(first.held!.current())));
    const strip = (rows: { createdAt: Date }[]) => rows.map(({ createdAt: _at, ...r }) => r);
    expect(strip(await taker.store.listHistory(tenant, conv))).toEqual(strip(await first.store.listHistory(tenant, conv)));
    const replay = await taker.store.appendHistory([entry(tenant, conv, { body: { dedupeKey: "a" } }), entry(tenant, conv, { body: { dedupeKey: "b" } })]);
    expect(replay.map((e) => [e.seq, e.interrupted])).toEqual([[1, true], [2, false]]);
    expect(await taker.store.listHistory(tenant, conv)).toHaveLength(3);
  });
});
