// Issue 9 item 6: each turn's final checkpoint and the blobs it references are kept in the
// store when the tenant's retention keeps content (never in privacy mode), and read back: a
// client that sends no conversation_state continues from the stored checkpoint (its turns, with
// their blobs sent again), an import takes the blobs the store holds instead of asking the
// client, and a state with zero turns starts the model's history over. On PGlite (embedded
// mode) and on PostgreSQL (distributed mode).
import { randomUUID } from "node:crypto";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { blobKey } from "@byok/protocol";
import { runRequestMessage } from "@byok/testing";
import {
  AgentClientMessageSchema, AgentServerMessageSchema, ConversationStateStructureSchema, ConversationTurnStructureSchema,
  type AgentServerMessage, type ConversationStateStructure,
} from "@byok/wire";
import type { ContentMode, Store } from "@byok/store";
import { ackKv, simTarget, suiteWorld, TEST_TIMERS, testEngine } from "./engine-fixture.js";

/** The route's context window: what every checkpoint must report as its maximum. */
const WINDOW = 64_000;

describe.each(["pglite", "postgres"] as const)("checkpoints in the store (%s)", (driver) => {
  const world = suiteWorld({ store: driver });

  interface Turn {
    frames: AgentServerMessage[];
    /** The provider request's messages. */
    prompt: { role: string; content: unknown }[];
    checkpoints: ConversationStateStructure[];
    /** set_blob_args the client was sent: blob key → bytes. */
    sentBlobs: Map<string, Uint8Array>;
    getBlobArgs: number;
  }

  /** The ids of every `getBlobs` call the engine made, one array per call. */
  const blobReads: Uint8Array[][] = [];
  const reading = (): Store => ({
    ...world.store,
    getBlobs: (tenantId, ids) => {
      blobReads.push([...ids]);
      return world.store.getBlobs(tenantId, ids);
    },
  });

  function engineFor(mode: ContentMode) {
    return testEngine(world.sim, world.bus, reading(), {
      content: { modeFor: async () => mode },
      resolveTargets: () => ({ ok: true as const, targets: [simTarget(world.sim, WINDOW)] }),
      // Every checkpoint is published (its acknowledgements never miss the wait on a loaded machine).
      timers: { ...TEST_TIMERS, kvAckTimeoutMs: 30_000 },
    });
  }

  async function turn(
    conversationId: string,
    text: string,
    opts: { mode?: ContentMode; state?: MessageInitShape<typeof ConversationStateStructureSchema>; answer?: string } = {},
  ): Promise<Turn> {
    const ref = { tenantId: "t", requestId: `cp-${randomUUID()}` };
    world.sim.enqueue({ text: [opts.answer ?? `answer to ${text}`], usage: { inputTokens: 7, outputTokens: 3 } });
    const before = world.sim.requests.length;
    const msg = runRequestMessage({ text, conversationId, modelId: "m", ...(opts.state ? { conversationState: opts.state } : {}) });
    await world.bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stopAcks = ackKv(world.bus, ref);
    try {
      await engineFor(opts.mode ?? "store").runGeneration(ref, 1);
    } finally {
      stopAcks();
    }
    const out = await world.bus.readOutput(ref, 1, 0, 1000);
    expect(out.end).toEqual({ ok: true });
    return read(out.entries.map((e) => fromBinary(AgentServerMessageSchema, e.frame)), world.sim.requests.slice(before));
  }

  function read(frames: AgentServerMessage[], requests: { body: unknown }[]): Turn {
    const checkpoints: ConversationStateStructure[] = [];
    const sentBlobs = new Map<string, Uint8Array>();
    let getBlobArgs = 0;
    for (const f of frames) {
      if (f.message.case === "conversationCheckpointUpdate") checkpoints.push(f.message.value);
      if (f.message.case === "kvServerMessage") {
        const kv = f.message.value.message;
        if (kv.case === "setBlobArgs") sentBlobs.set(blobKey(kv.value.blobId), kv.value.blobData);
        if (kv.case === "getBlobArgs") getBlobArgs++;
      }
    }
    expect(requests).toHaveLength(1);
    return { frames, prompt: (requests[0]!.body as { messages: Turn["prompt"] }).messages, checkpoints, sentBlobs, getBlobArgs };
  }

  const userTexts = (t: Turn) => t.prompt.filter((m) => m.role === "user").map((m) => String(m.content));
  const final = (t: Turn) => t.checkpoints.at(-1)!;
  const bytes = (s: ConversationStateStructure) => Array.from(toBinary(ConversationStateStructureSchema, s));

    it("keeps the turn's final checkpoint, fenced, with every blob it references; maxTokens is the route's window", async () => {
      const conv = `c-keep-${randomUUID().slice(0, 8)}`;
      const t = await turn(conv, "first question");
      const stored = await world.store.latestCheckpoint("t", conv);
      expect(stored).toBeDefined();
      expect(Array.from(stored!.state)).toEqual(bytes(final(t)));
      expect(final(t).tokenDetails?.maxTokens).toBe(WINDOW);
      expect(final(t).turns).toHaveLength(1);
      expect(t.sentBlobs.size).toBeGreaterThan(0);
      for (const [key, data] of t.sentBlobs) {
        const got = await world.store.getBlobs("t", [new Uint8Array(Buffer.from(key, "hex"))]).then(([b]) => b);
        expect(got && Array.from(got)).toEqual(Array.from(data));
      }
    });

    it.each(["ephemeral", "ephemeral_keep_conversation"] as const)("privacy (%s): no checkpoint and no blob row is written", async (mode) => {
      const conv = `c-private-${mode}-${randomUUID().slice(0, 8)}`;
      const t = await turn(conv, "a private question", { mode });
      expect(final(t).turns).toHaveLength(1);
      expect(await world.store.latestCheckpoint("t", conv)).toBeUndefined();
      expect(t.sentBlobs.size).toBeGreaterThan(0);
      for (const key of t.sentBlobs.keys()) expect(await world.store.getBlobs("t", [new Uint8Array(Buffer.from(key, "hex"))]).then(([b]) => b)).toBeUndefined();
    });

    it("a client without local state continues from the stored checkpoint: its turns, and their blobs sent again", async () => {
      const conv = `c-lost-${randomUUID().slice(0, 8)}`;
      const one = await turn(conv, "question one");
      const two = await turn(conv, "question two");
      // The model sees turn one; the client gets a checkpoint listing both turns and turn one's blobs.
      expect(userTexts(two)).toEqual(["question one", "question two"]);
      const turnOne = final(one).turns[0]!;
      expect(final(two).turns.map(blobKey)).toEqual([blobKey(turnOne), blobKey(final(two).turns[1]!)]);
      const sentTurn = two.sentBlobs.get(blobKey(turnOne));
      expect(sentTurn && Array.from(sentTurn)).toEqual(Array.from(one.sentBlobs.get(blobKey(turnOne))!));
      const agentTurn = fromBinary(ConversationTurnStructureSchema, sentTurn!).turn;
      expect(agentTurn.case).toBe("agentConversationTurn");
      const refs = agentTurn.case === "agentConversationTurn" ? [agentTurn.value.userMessage, ...agentTurn.value.steps] : [];
      expect(refs.length).toBeGreaterThan(1);
      for (const r of refs) expect(two.sentBlobs.has(blobKey(r))).toBe(true);
      expect(Array.from((await world.store.latestCheckpoint("t", conv))!.state)).toEqual(bytes(final(two)));
    });

    it("a state the client restored to an earlier checkpoint wins over the stored one", async () => {
      const conv = `c-restore-${randomUUID().slice(0, 8)}`;
      const one = await turn(conv, "keep this");
      await turn(conv, "discard this");
      const again = await turn(conv, "after the restore", { state: final(one) });
      expect(userTexts(again)).toEqual(["keep this", "after the restore"]);
      expect(final(again).turns).toHaveLength(2);
    });

    it("a client that keeps its state: each turn resolves the turns it lists from the store in one read", async () => {
      const conv = `c-kept-${randomUUID().slice(0, 8)}`;
      let state: ConversationStateStructure | undefined;
      for (const text of ["one", "two", "three", "four"]) state = final(await turn(conv, text, state ? { state } : {}));
      blobReads.length = 0;
      const five = await turn(conv, "five", { state: state! });
      expect(userTexts(five)).toEqual(["one", "two", "three", "four", "five"]);
      // The four turns the state lists, read by one statement (they were stored by the turns before).
      expect(blobReads.map((ids) => ids.map(blobKey))).toEqual([state!.turns.map(blobKey)]);
    });

    it("a state with zero turns (restored to the very beginning) starts the model's history over", async () => {
      const conv = `c-zero-${randomUUID().slice(0, 8)}`;
      await turn(conv, "forgotten question");
      const fresh = await turn(conv, "from the beginning", { state: {} });
      expect(userTexts(fresh)).toEqual(["from the beginning"]);
      expect(final(fresh).turns).toHaveLength(1);
    });

    it("an import takes the blobs the store holds instead of asking the client (no get_blob_args)", async () => {
      const elsewhere = `c-source-${randomUUID().slice(0, 8)}`;
      const one = await turn(elsewhere, "question from the first chat", { answer: "the first chat's answer" });
      // The same turns under a conversation id the store has never seen (a duplicated chat).
      const copy = await turn(`c-copy-${randomUUID().slice(0, 8)}`, "question in the copy", { state: { turns: final(one).turns } });
      expect(copy.getBlobArgs).toBe(0);
      expect(userTexts(copy)).toEqual(["question from the first chat", "question in the copy"]);
      expect(JSON.stringify(copy.prompt)).toContain("the first chat's answer");
    });
});
