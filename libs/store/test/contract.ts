/**
 * The one behavioural suite every Store implementation must pass. Each driver's test file
 * calls storeContract() with a factory; driver-specific checks (persistence, pools) go
 * beside it, on top. Tests share one store per suite and isolate themselves with random
 * tenant and conversation ids, so they also hold on a database that is not empty.
 */
import { createHash, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isStoreError, knownMigrations, type NewHistoryEntry, type Store } from "../src/index.js";

/** Returns a new store on an empty (or at least isolated) database, already migrated. */
export type StoreFactory = () => Promise<Store>;

/**
 * What a Store keeps beyond history and blobs (all true for the database stores). The
 * ephemeral content store (src/content/ephemeral.ts) keeps by design history only in memory, no
 * checkpoints, no fences and, in `ephemeral` mode, no conversation rows; the checks of those are
 * skipped there.
 */
export interface StoreKeeps {
  /** A history read with a touch stores the conversation's row. */
  conversationRows: boolean;
  /** A history append reaches the database (and so creates the conversation row). */
  durableHistory: boolean;
  checkpoints: boolean;
  fences: boolean;
}

const KEEPS_ALL: StoreKeeps = { conversationRows: true, durableHistory: true, checkpoints: true, fences: true };

export function storeContract(name: string, factory: StoreFactory, keeps: StoreKeeps = KEEPS_ALL): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    beforeAll(async () => {
      store = await factory();
    });
    afterAll(async () => {
      await store?.close();
    });

    describe("migrations", () => {
      it("applies every committed migration, in order, to an empty database", async () => {
        const known = knownMigrations();
        expect(known.length).toBeGreaterThan(0);
        expect(await store.migrations()).toEqual(known);
      });
    });

    describe.skipIf(!keeps.conversationRows)("conversations", () => {
      /** The conversation's touch (a pass's history read) and the record it left. */
      const touch = async (tenant: string, conv: string, meta: Record<string, unknown> = {}) => {
        await store.listHistory(tenant, conv, meta);
        const record = await store.getConversation(tenant, conv);
        if (record === undefined) throw new Error("the touch stored no conversation");
        return record;
      };

      it("is undefined before the first touch", async () => {
        const { tenant, conv } = ids();
        expect(await store.getConversation(tenant, conv)).toBeUndefined();
      });

      it("creates with the touch's meta, and returns the history in the same call", async () => {
        const { tenant, conv } = ids();
        expect(await store.listHistory(tenant, conv, {})).toEqual([]);
        const created = await store.getConversation(tenant, conv);
        expect(created).toMatchObject({ tenantId: tenant, conversationId: conv, meta: {} });
        expect(created?.createdAt).toBeInstanceOf(Date);
        await store.appendHistory([entry(tenant, conv), entry(tenant, conv)]);
        const touched = await store.listHistory(tenant, conv, { lastRequestId: "r2" });
        expect(touched).toEqual(await store.listHistory(tenant, conv));
        expect(touched.map((e) => e.seq)).toEqual([0, 1]);
        expect((await store.getConversation(tenant, conv))?.meta).toEqual({ lastRequestId: "r2" });
      });

      it("reads history without a touch and leaves the conversation as it was", async () => {
        const { tenant, conv } = ids();
        expect(await store.listHistory(tenant, conv)).toEqual([]);
        expect(await store.getConversation(tenant, conv)).toBeUndefined();
      });

      it("merges meta shallowly: new keys added, same keys replaced, others kept", async () => {
        const { tenant, conv } = ids();
        await touch(tenant, conv, { mode: "agent", model: { id: "a" } });
        const merged = await touch(tenant, conv, { model: { name: "b" }, summary: 3 });
        expect(merged.meta).toEqual({ mode: "agent", model: { name: "b" }, summary: 3 });
        const untouched = await touch(tenant, conv);
        expect(untouched.meta).toEqual(merged.meta);
        expect(untouched.createdAt).toEqual(merged.createdAt);
        expect(untouched.updatedAt.getTime()).toBeGreaterThanOrEqual(untouched.createdAt.getTime());
      });

      it("loses no key under concurrent touches", async () => {
        const { tenant, conv } = ids();
        await Promise.all(Array.from({ length: 10 }, (_, i) => store.listHistory(tenant, conv, { [`k${i}`]: i })));
        const meta = (await store.getConversation(tenant, conv))?.meta;
        expect(meta).toEqual(Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, i])));
      });
    });

    describe("history", () => {
      it("appends in order with seq 0, 1, 2 ... and continues after the last entry", async () => {
        const { tenant, conv } = ids();
        const a = await store.appendHistory([entry(tenant, conv, { kind: "user" }), entry(tenant, conv, { kind: "assistant" })]);
        expect(a.map((e) => [e.seq, e.kind])).toEqual([[0, "user"], [1, "assistant"]]);
        const b = await store.appendHistory([entry(tenant, conv, { kind: "tool", body: { n: [1, "x", null] } })]);
        expect(b).toHaveLength(1);
        expect(b[0]).toMatchObject({ seq: 2, kind: "tool", body: { n: [1, "x", null] }, interrupted: false });
        const listed = await store.listHistory(tenant, conv);
        expect(listed.map((e) => e.seq)).toEqual([0, 1, 2]);
        expect(listed).toEqual([...a, ...b]);
      });

      it("round-trips every field", async () => {
        const { tenant, conv } = ids();
        const input = entry(tenant, conv, { requestId: "r-9", generation: 4, turn: 7, kind: "summary", body: { text: "é ☃" } });
        const [stored] = await store.appendHistory([input]);
        expect(stored).toEqual({ ...input, seq: 0, createdAt: expect.any(Date) });
      });

      it.skipIf(!keeps.durableHistory)("creates the conversation if it did not exist", async () => {
        const { tenant, conv } = ids();
        await store.appendHistory([entry(tenant, conv)]);
        expect(await store.getConversation(tenant, conv)).toMatchObject({ tenantId: tenant, conversationId: conv });
      });

      it("returns [] for an empty append and an empty list for an unknown conversation", async () => {
        const { tenant, conv } = ids();
        expect(await store.appendHistory([])).toEqual([]);
        expect(await store.listHistory(tenant, conv)).toEqual([]);
      });

      it("rejects one append spanning two conversations, appending nothing", async () => {
        const { tenant, conv } = ids();
        const err = await store
          .appendHistory([entry(tenant, conv), entry(tenant, `${conv}-other`)])
          .catch((e: unknown) => e);
        expect(isStoreError(err, "invalid_argument")).toBe(true);
        expect(await store.listHistory(tenant, conv)).toEqual([]);
      });

      it("gives 20 concurrent single appends the contiguous seqs 0..19, each once", async () => {
        const { tenant, conv } = ids();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.appendHistory([entry(tenant, conv, { turn: i })])),
        );
        const seqs = results.map((r) => r[0]?.seq).sort((x, y) => (x ?? 0) - (y ?? 0));
        expect(seqs).toEqual(range(20));
        const listed = await store.listHistory(tenant, conv);
        expect(listed.map((e) => e.seq)).toEqual(range(20));
        expect(new Set(listed.map((e) => e.turn)).size).toBe(20);
      });

      it("keeps each concurrent batch contiguous and in its own order", async () => {
        const { tenant, conv } = ids();
        const batches = await Promise.all(
          Array.from({ length: 8 }, (_, b) =>
            store.appendHistory([0, 1, 2].map((i) => entry(tenant, conv, { turn: b, body: { i } }))),
          ),
        );
        for (const batch of batches) {
          const start = batch[0]?.seq ?? -1;
          expect(batch.map((e) => e.seq)).toEqual([start, start + 1, start + 2]);
          expect(batch.map((e) => (e.body as { i: number }).i)).toEqual([0, 1, 2]);
        }
        expect((await store.listHistory(tenant, conv)).map((e) => e.seq)).toEqual(range(24));
      });
    });

    describe("history idempotency (takeover re-append)", () => {
      it("does not append an entry whose (requestId, generation, dedupeKey) is stored, and returns the stored one", async () => {
        const { tenant, conv } = ids();
        await store.appendHistory([entry(tenant, conv, { kind: "user" })]);
        const first = await store.appendHistory([
          entry(tenant, conv, { body: { dedupeKey: "a", text: "one" } }),
          entry(tenant, conv, { body: { dedupeKey: "b", text: "two" } }),
        ]);
        // A worker taking over replays what it had plus what it produced since.
        const replay = await store.appendHistory([
          entry(tenant, conv, { body: { dedupeKey: "a", text: "one" } }),
          entry(tenant, conv, { body: { dedupeKey: "b", text: "two" } }),
          entry(tenant, conv, { body: { dedupeKey: "c", text: "three" } }),
        ]);
        expect(replay.slice(0, 2)).toEqual(first);
        expect(replay[2]).toMatchObject({ seq: 3, body: { dedupeKey: "c" } });
        expect((await store.listHistory(tenant, conv)).map((e) => e.seq)).toEqual([0, 1, 2, 3]);
      });

      it("keys on request and generation too: the same dedupeKey in a new generation or request is appended", async () => {
        const { tenant, conv } = ids();
        await store.appendHistory([entry(tenant, conv, { requestId: "r1", generation: 1, body: { dedupeKey: "k" } })]);
        await store.appendHistory([entry(tenant, conv, { requestId: "r1", generation: 2, body: { dedupeKey: "k" } })]);
        await store.appendHistory([entry(tenant, conv, { requestId: "r2", generation: 1, body: { dedupeKey: "k" } })]);
        expect(await store.listHistory(tenant, conv)).toHaveLength(3);
      });

      it("always appends entries without a dedupeKey", async () => {
        const { tenant, conv } = ids();
        await store.appendHistory([entry(tenant, conv, { body: { text: "same" } })]);
        await store.appendHistory([entry(tenant, conv, { body: { text: "same" } })]);
        expect(await store.listHistory(tenant, conv)).toHaveLength(2);
      });

      it("stores a key repeated within one batch once", async () => {
        const { tenant, conv } = ids();
        const out = await store.appendHistory([
          entry(tenant, conv, { body: { dedupeKey: "x" } }),
          entry(tenant, conv, { body: { dedupeKey: "x" } }),
        ]);
        expect(out.map((e) => e.seq)).toEqual([0, 0]);
        expect(await store.listHistory(tenant, conv)).toHaveLength(1);
      });

      it("stores each key once when takeover and original race", async () => {
        const { tenant, conv } = ids();
        const batch = () => ["a", "b", "c"].map((k) => entry(tenant, conv, { body: { dedupeKey: k } }));
        await Promise.all([store.appendHistory(batch()), store.appendHistory(batch()), store.appendHistory(batch())]);
        expect((await store.listHistory(tenant, conv)).map((e) => e.seq)).toEqual([0, 1, 2]);
      });
    });

    describe("markInterrupted", () => {
      it("marks exactly the given seqs; empty and unknown seqs change nothing", async () => {
        const { tenant, conv } = ids();
        await store.appendHistory(range(4).map(() => entry(tenant, conv)));
        await store.markInterrupted(tenant, conv, []);
        await store.markInterrupted(tenant, conv, [1, 3, 99]);
        const listed = await store.listHistory(tenant, conv);
        expect(listed.map((e) => e.interrupted)).toEqual([false, true, false, true]);
      });

      it("keeps entries appended as interrupted marked", async () => {
        const { tenant, conv } = ids();
        await store.appendHistory([entry(tenant, conv, { interrupted: true })]);
        expect((await store.listHistory(tenant, conv))[0]?.interrupted).toBe(true);
      });
    });

    describe.skipIf(!keeps.checkpoints)("checkpoints", () => {
      it("is undefined before the first save", async () => {
        const { tenant, conv } = ids();
        expect(await store.latestCheckpoint(tenant, conv)).toBeUndefined();
      });

      it("returns the latest save, bytes intact, per conversation", async () => {
        const { tenant, conv } = ids();
        const save = (c: string, generation: number, bytes: number[]) =>
          store.saveCheckpoint({ tenantId: tenant, conversationId: c, requestId: "r", generation, state: new Uint8Array(bytes) });
        await save(conv, 1, [1, 2, 3]);
        await save(conv, 2, [0, 255, 0, 10]);
        await save(`${conv}-other`, 9, [9]);
        const latest = await store.latestCheckpoint(tenant, conv);
        expect(latest).toMatchObject({ tenantId: tenant, conversationId: conv, requestId: "r", generation: 2 });
        expect(latest?.state).toBeInstanceOf(Uint8Array);
        expect(Array.from(latest?.state ?? [])).toEqual([0, 255, 0, 10]);
        expect(latest?.createdAt).toBeInstanceOf(Date);
      });
    });

    describe.skipIf(!keeps.fences || !keeps.checkpoints)("run fences (epochs of the bus claim)", () => {
      const fence = (epoch: number, requestId = "req-1") => ({ requestId, generation: 1, epoch });

      it("refuses history, interrupted marks and checkpoints of an older epoch once a newer one claimed, writing nothing", async () => {
        const { tenant, conv } = ids();
        expect(await store.claimRun(tenant, fence(1))).toBe(true);
        await store.appendHistory([entry(tenant, conv, { kind: "user" })], fence(1));
        expect(await store.claimRun(tenant, fence(2))).toBe(true); // the takeover
        const refused = async (p: Promise<unknown>) => {
          const err = await p.then(() => undefined, (e: unknown) => e);
          expect(isStoreError(err, "fenced")).toBe(true);
        };
        await refused(store.appendHistory([entry(tenant, conv, { body: { text: "stale answer" } })], fence(1)));
        await refused(store.markInterrupted(tenant, conv, [0], fence(1)));
        await refused(store.saveCheckpoint({ tenantId: tenant, conversationId: conv, requestId: "req-1", generation: 1, state: new Uint8Array([1]) }, fence(1)));
        expect((await store.listHistory(tenant, conv)).map((e) => [e.kind, e.interrupted])).toEqual([["user", false]]);
        expect(await store.latestCheckpoint(tenant, conv)).toBeUndefined();
        // The current owner writes; so do unfenced writers and other generations or requests.
        await store.appendHistory([entry(tenant, conv, { body: { text: "new owner" } })], fence(2));
        await store.saveCheckpoint({ tenantId: tenant, conversationId: conv, requestId: "req-1", generation: 1, state: new Uint8Array([2]) }, fence(2));
        await store.appendHistory([entry(tenant, conv, { requestId: "req-2" })], fence(1, "req-2"));
        expect(await store.listHistory(tenant, conv)).toHaveLength(3);
        expect(Array.from((await store.latestCheckpoint(tenant, conv))!.state)).toEqual([2]);
      });

      it("refuses in the write itself: racing a claim, every write is either stored and reported, or refused and absent", async () => {
        const { tenant, conv } = ids();
        await store.claimRun(tenant, fence(1));
        const writes = Array.from({ length: 12 }, (_, i) =>
          i % 2 === 0
            ? store.appendHistory([entry(tenant, conv, { body: { text: `w${i}` } })], fence(1))
            : store.saveCheckpoint({ tenantId: tenant, conversationId: conv, requestId: "req-1", generation: 1, state: new Uint8Array([i]) }, fence(1)),
        );
        const claim = store.claimRun(tenant, fence(2));
        const outcomes = await Promise.allSettled(writes);
        expect(await claim).toBe(true);
        for (const o of outcomes) if (o.status === "rejected") expect(isStoreError(o.reason, "fenced")).toBe(true);
        const storedTexts = (await store.listHistory(tenant, conv)).map((e) => (e.body as { text: string }).text);
        const reported = outcomes.flatMap((o, i) => (o.status === "fulfilled" && i % 2 === 0 ? [`w${i}`] : []));
        expect(storedTexts.sort()).toEqual(reported.sort());
        const saved = outcomes.flatMap((o, i) => (o.status === "fulfilled" && i % 2 === 1 ? [i] : []));
        const latest = await store.latestCheckpoint(tenant, conv);
        if (saved.length === 0) expect(latest).toBeUndefined();
        else expect(saved).toContain(latest?.state[0]);
        // Once the claim is recorded, nothing of the old epoch gets in.
        const late = await store.saveCheckpoint({ tenantId: tenant, conversationId: conv, requestId: "req-1", generation: 1, state: new Uint8Array([99]) }, fence(1)).then(() => undefined, (e: unknown) => e);
        expect(isStoreError(late, "fenced")).toBe(true);
      });

      it("a current owner marking seqs that do not exist is no error", async () => {
        const { tenant, conv } = ids();
        await store.claimRun(tenant, fence(4));
        await store.markInterrupted(tenant, conv, [41, 42], fence(4));
      });

      it("never lowers the epoch: a stale claim reports false and changes nothing", async () => {
        const { tenant, conv } = ids();
        expect(await store.claimRun(tenant, fence(3))).toBe(true);
        expect(await store.claimRun(tenant, fence(2))).toBe(false);
        const err = await store.appendHistory([entry(tenant, conv)], fence(2)).then(() => undefined, (e: unknown) => e);
        expect(isStoreError(err, "fenced")).toBe(true);
        await store.appendHistory([entry(tenant, conv)], fence(3));
      });

      it("is per tenant: another tenant's claim of the same ids fences nothing", async () => {
        const { tenant, conv } = ids();
        const other = `${tenant}-other`;
        await store.claimRun(tenant, fence(1));
        await store.claimRun(other, fence(5));
        await store.appendHistory([entry(tenant, conv)], fence(1));
        expect(await store.listHistory(tenant, conv)).toHaveLength(1);
      });
    });

    describe("blobs", () => {
      it("stores by SHA-256 and returns the same bytes; unknown ids are undefined", async () => {
        const { tenant } = ids();
        const data = new Uint8Array([5, 4, 3, 2, 1, 0]);
        await store.putBlobs(tenant, [{ id: sha256(data), data }]);
        const got = await store.getBlobs(tenant, [sha256(data)]).then(([b]) => b);
        expect(got).toBeInstanceOf(Uint8Array);
        expect(Array.from(got ?? [])).toEqual(Array.from(data));
        expect(await store.getBlobs(tenant, [sha256(new Uint8Array([7]))]).then(([b]) => b)).toBeUndefined();
      });

      it("is idempotent on a repeated put, including the empty blob and a repeat within one put", async () => {
        const { tenant } = ids();
        const empty = new Uint8Array(0);
        await store.putBlobs(tenant, [{ id: sha256(empty), data: empty }]);
        await store.putBlobs(tenant, [{ id: sha256(empty), data: empty }, { id: sha256(empty), data: empty }]);
        await store.putBlobs(tenant, []);
        expect((await store.getBlobs(tenant, [sha256(empty)]).then(([b]) => b))?.length).toBe(0);
      });

      it("stores several blobs in one put", async () => {
        const { tenant } = ids();
        const blobs = [new Uint8Array([1]), new Uint8Array([2, 2]), new Uint8Array(3000).fill(3)];
        await store.putBlobs(tenant, blobs.map((data) => ({ id: sha256(data), data })));
        for (const data of blobs) expect(Array.from((await store.getBlobs(tenant, [sha256(data)]).then(([b]) => b)) ?? [])).toEqual(Array.from(data));
      });

      it("reads several blobs in one call, in the order asked: missing, repeated and other tenants' ids included", async () => {
        const { tenant } = ids();
        const [a, b, c] = [new Uint8Array([1, 2]), new Uint8Array(5000).fill(4), new Uint8Array(0)];
        await store.putBlobs(tenant, [a, b, c].map((data) => ({ id: sha256(data), data })));
        const theirs = new Uint8Array([6, 6, 6]);
        await store.putBlobs(`${tenant}-other`, [{ id: sha256(theirs), data: theirs }]);
        const missing = sha256(new Uint8Array([0, 0]));
        const got = await store.getBlobs(tenant, [sha256(b), missing, sha256(a), sha256(theirs), sha256(b), sha256(c)]);
        expect(got.map((x) => (x === undefined ? undefined : Array.from(x)))).toEqual([
          Array.from(b), undefined, Array.from(a), undefined, Array.from(b), [],
        ]);
        expect(await store.getBlobs(tenant, [])).toEqual([]);
      });

      it("rejects an id that is not the SHA-256 of the data, storing nothing", async () => {
        const { tenant } = ids();
        const data = new Uint8Array([1, 2, 3]);
        const wrong = sha256(new Uint8Array([3, 2, 1]));
        for (const id of [wrong, sha256(data).subarray(0, 16), new Uint8Array(0)]) {
          const err = await store.putBlobs(tenant, [{ id, data }]).catch((e: unknown) => e);
          expect(isStoreError(err, "blob_hash_mismatch")).toBe(true);
        }
        expect(await store.getBlobs(tenant, [wrong]).then(([b]) => b)).toBeUndefined();
        // One bad blob in a put: none of them is stored.
        const good = new Uint8Array([9, 9]);
        const err = await store.putBlobs(tenant, [{ id: sha256(good), data: good }, { id: wrong, data }]).catch((e: unknown) => e);
        expect(isStoreError(err, "blob_hash_mismatch")).toBe(true);
        expect(await store.getBlobs(tenant, [sha256(good)]).then(([b]) => b)).toBeUndefined();
      });
    });

    describe("blobs with a history append", () => {
      it("stores the blobs given with an append, fenced or not, repeats included", async () => {
        const { tenant, conv } = ids();
        const [one, two] = [new Uint8Array([1, 1]), new Uint8Array(3000).fill(7)];
        const appended = await store.appendHistory([entry(tenant, conv)], undefined, { blobs: [{ id: sha256(one), data: one }, { id: sha256(one), data: one }] });
        expect(appended.map((e) => e.seq)).toEqual([0]);
        expect(Array.from((await store.getBlobs(tenant, [sha256(one)]).then(([b]) => b)) ?? [])).toEqual([1, 1]);
        if (keeps.fences) {
          const fence = { requestId: `r-${randomUUID()}`, generation: 1, epoch: 1 };
          expect(await store.claimRun(tenant, fence)).toBe(true);
          await store.appendHistory([entry(tenant, conv, { requestId: fence.requestId })], fence, { blobs: [{ id: sha256(two), data: two }, { id: sha256(one), data: one }] });
          expect(Array.from((await store.getBlobs(tenant, [sha256(two)]).then(([b]) => b)) ?? [])).toEqual(Array.from(two));
        }
        expect((await store.listHistory(tenant, conv)).length).toBe(keeps.fences ? 2 : 1);
      });

      it("appends nothing and stores none of them when one blob's id is wrong", async () => {
        const { tenant, conv } = ids();
        const good = new Uint8Array([4, 2]);
        const err = await store
          .appendHistory([entry(tenant, conv)], undefined, { blobs: [{ id: sha256(good), data: good }, { id: sha256(new Uint8Array([0])), data: good }] })
          .catch((e: unknown) => e);
        expect(isStoreError(err, "blob_hash_mismatch")).toBe(true);
        expect(await store.getBlobs(tenant, [sha256(good)]).then(([b]) => b)).toBeUndefined();
        expect(await store.listHistory(tenant, conv)).toEqual([]);
      });
    });

    describe("a checkpoint with a history append", () => {
      const checkpoint = (tenant: string, conv: string, bytes: number[], requestId = "req-cp", generation = 1) =>
        ({ tenantId: tenant, conversationId: conv, requestId, generation, state: new Uint8Array(bytes) });

      it("saves the checkpoint with the entries and the blobs, unfenced and under a holding fence", async () => {
        const { tenant, conv } = ids();
        const blob = new Uint8Array([5, 5, 5]);
        const appended = await store.appendHistory([entry(tenant, conv, { kind: "assistant" })], undefined, {
          blobs: [{ id: sha256(blob), data: blob }],
          checkpoint: checkpoint(tenant, conv, [1, 2]),
        });
        expect(appended.map((e) => e.kind)).toEqual(["assistant"]);
        expect(Array.from((await store.getBlobs(tenant, [sha256(blob)]).then(([b]) => b)) ?? [])).toEqual([5, 5, 5]);
        if (keeps.checkpoints) {
          expect(await store.latestCheckpoint(tenant, conv)).toMatchObject({ tenantId: tenant, conversationId: conv, requestId: "req-cp", generation: 1 });
          expect(Array.from((await store.latestCheckpoint(tenant, conv))!.state)).toEqual([1, 2]);
        } else {
          expect(await store.latestCheckpoint(tenant, conv)).toBeUndefined();
        }
        if (keeps.fences) {
          const fence = { requestId: `r-${randomUUID()}`, generation: 3, epoch: 1 };
          expect(await store.claimRun(tenant, fence)).toBe(true);
          await store.appendHistory([entry(tenant, conv, { requestId: fence.requestId, generation: 3 })], fence, { checkpoint: checkpoint(tenant, conv, [7], fence.requestId, 3) });
          expect(await store.latestCheckpoint(tenant, conv)).toMatchObject({ requestId: fence.requestId, generation: 3 });
          expect(Array.from((await store.latestCheckpoint(tenant, conv))!.state)).toEqual([7]);
        }
        expect(await store.listHistory(tenant, conv)).toHaveLength(keeps.fences ? 2 : 1);
      });

      it.skipIf(!keeps.fences)("saves neither the entries nor the checkpoint under a fence a newer claim replaced", async () => {
        const { tenant, conv } = ids();
        const fence = (epoch: number) => ({ requestId: "req-cp", generation: 1, epoch });
        expect(await store.claimRun(tenant, fence(1))).toBe(true);
        await store.appendHistory([entry(tenant, conv, { requestId: "req-cp" })], fence(1), { checkpoint: checkpoint(tenant, conv, [1]) });
        expect(await store.claimRun(tenant, fence(2))).toBe(true);
        const err = await store
          .appendHistory([entry(tenant, conv, { requestId: "req-cp", body: { text: "stale" } })], fence(1), { checkpoint: checkpoint(tenant, conv, [2]) })
          .then(() => undefined, (e: unknown) => e);
        expect(isStoreError(err, "fenced")).toBe(true);
        expect(await store.listHistory(tenant, conv)).toHaveLength(1);
        expect(Array.from((await store.latestCheckpoint(tenant, conv))!.state)).toEqual([1]);
      });

      it("refuses a checkpoint of another conversation or tenant, writing nothing", async () => {
        const { tenant, conv } = ids();
        for (const wrong of [checkpoint(tenant, `${conv}-other`, [1]), checkpoint(`${tenant}-other`, conv, [1])]) {
          const err = await store.appendHistory([entry(tenant, conv)], undefined, { checkpoint: wrong }).then(() => undefined, (e: unknown) => e);
          expect(isStoreError(err, "invalid_argument")).toBe(true);
        }
        expect(await store.listHistory(tenant, conv)).toEqual([]);
        expect(await store.latestCheckpoint(tenant, conv)).toBeUndefined();
        expect(await store.latestCheckpoint(tenant, `${conv}-other`)).toBeUndefined();
      });

      it("saves no checkpoint with no entries", async () => {
        const { tenant, conv } = ids();
        expect(await store.appendHistory([], undefined, { checkpoint: checkpoint(tenant, conv, [1]) })).toEqual([]);
        expect(await store.latestCheckpoint(tenant, conv)).toBeUndefined();
      });
    });

    describe("tenant isolation", () => {
      it("never shows tenant A's conversation, history, checkpoints or blobs to tenant B", async () => {
        const a = `tenant-a-${randomUUID()}`;
        const b = `tenant-b-${randomUUID()}`;
        const conv = `shared-${randomUUID()}`; // same conversation id in both tenants
        const blob = new Uint8Array([42, 42]);

        await store.listHistory(a, conv, { owner: "a" });
        await store.appendHistory([entry(a, conv, { body: { dedupeKey: "k", secret: "a" } }), entry(a, conv)]);
        await store.saveCheckpoint({ tenantId: a, conversationId: conv, requestId: "r", generation: 1, state: new Uint8Array([1]) });
        await store.putBlobs(a, [{ id: sha256(blob), data: blob }]);

        expect(await store.getConversation(b, conv)).toBeUndefined();
        expect(await store.listHistory(b, conv)).toEqual([]);
        if (keeps.checkpoints) expect(await store.latestCheckpoint(a, conv)).toBeDefined();
        expect(await store.latestCheckpoint(b, conv)).toBeUndefined();
        expect(await store.getBlobs(b, [sha256(blob)]).then(([b]) => b)).toBeUndefined();

        // B acting on the same ids neither sees nor changes A's rows.
        expect(await store.listHistory(b, conv, { owner: "b" })).toEqual([]);
        if (keeps.conversationRows) expect((await store.getConversation(b, conv))?.meta).toEqual({ owner: "b" });
        const bEntries = await store.appendHistory([entry(b, conv, { body: { dedupeKey: "k" } })]);
        expect(bEntries.map((e) => [e.tenantId, e.seq])).toEqual([[b, 0]]);
        await store.markInterrupted(b, conv, [0, 1]);

        if (keeps.conversationRows) expect((await store.getConversation(a, conv))?.meta).toEqual({ owner: "a" });
        const aHistory = await store.listHistory(a, conv);
        expect(aHistory.map((e) => [e.tenantId, e.seq, e.interrupted])).toEqual([[a, 0, false], [a, 1, false]]);
        expect(await store.listHistory(b, conv)).toHaveLength(1);
      });
    });
  });
}

function ids(): { tenant: string; conv: string } {
  return { tenant: `t-${randomUUID()}`, conv: `c-${randomUUID()}` };
}

function entry(tenantId: string, conversationId: string, over: Partial<NewHistoryEntry> = {}): NewHistoryEntry {
  return {
    tenantId,
    conversationId,
    requestId: "req-1",
    generation: 1,
    turn: 0,
    kind: "assistant",
    body: { text: "hello" },
    interrupted: false,
    ...over,
  };
}

function sha256(data: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(data).digest());
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}
