// Issue 9 item 3: the client's conversation_state decides which turns exist; stored history
// only supplies the content of the turns it lists (docs/architecture.md "History").
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createCursorClient, createWorkspaceExecutor, makeWorkspace, runRequestMessage,
  type CursorClient, type RunTurnResult, type WorkspaceExecutor,
} from "@byok/testing";
import type { AgentServerMessage, ConversationStateStructure } from "@byok/wire";
import { startHarness, TEST_MODEL, type Harness } from "./harness.js";

const CONV = "c-client-turns";

describe("the client's conversation_state decides which turns the model sees", () => {
  let h: Harness;
  let deviceA: CursorClient;
  let ws: WorkspaceExecutor;
  /** Device A's blob store, kept across its turns like Cursor's. */
  const blobsA = new Map<string, Uint8Array>();
  let n = 0;
  const state: Record<string, ConversationStateStructure> = {};

  beforeAll(async () => {
    h = await startHarness();
    deviceA = createCursorClient({ baseUrl: h.gw.url });
    const dir = await makeWorkspace(await mkdtemp(join(tmpdir(), "ws-turns-")), { "notes.txt": "FILE-CONTENT-FROM-READ\n" });
    ws = createWorkspaceExecutor(dir);
  });
  afterAll(async () => h.close());

  /** One turn from `client` continuing from `from` (a checkpoint it got); returns the result and the provider bodies of the turn. */
  async function turn(client: CursorClient, text: string, from: ConversationStateStructure | undefined, blobs = blobsA): Promise<{ r: RunTurnResult; bodies: string[] }> {
    const before = h.sim.requests.length;
    const r = await client.runTurn({
      requestId: `turns-${++n}`,
      blobs,
      message: runRequestMessage({ text, conversationId: CONV, modelId: TEST_MODEL, ...(from ? { conversationState: from } : {}) }),
      onMessage: async (m: AgentServerMessage, t) => {
        if (m.message.case !== "execServerMessage") return;
        for (const reply of await ws.execute(m.message.value)) await t.append(reply);
      },
    });
    expect(r.end).toEqual({ ok: true });
    if (!r.lastCheckpoint) throw new Error("no checkpoint");
    return { r, bodies: h.sim.requests.slice(before).map((q) => q.rawBody) };
  }

  it("three turns on device A, each continuing from the previous checkpoint", async () => {
    h.sim.enqueue({ text: "ANSWER-ONE", usage: { inputTokens: 1, outputTokens: 1 } });
    state.one = (await turn(deviceA, "TURN-ONE-TEXT", undefined)).r.lastCheckpoint!;
    h.sim.enqueue(
      { toolCalls: [{ name: "Read", arguments: JSON.stringify({ path: "notes.txt" }) }], usage: { inputTokens: 1, outputTokens: 1 } },
      { text: "ANSWER-TWO", usage: { inputTokens: 1, outputTokens: 1 } },
    );
    state.two = (await turn(deviceA, "TURN-TWO-TEXT", state.one)).r.lastCheckpoint!;
    h.sim.enqueue({ text: "ANSWER-THREE", usage: { inputTokens: 1, outputTokens: 1 } });
    const three = await turn(deviceA, "TURN-THREE-TEXT", state.two);
    state.three = three.r.lastCheckpoint!;
    expect(three.bodies[0]).toContain("FILE-CONTENT-FROM-READ");
    expect(state.three.turns).toHaveLength(3);
  });

  it("restore checkpoint: a run from turn one's checkpoint leaves turns two and three out", async () => {
    h.sim.enqueue({ text: "ANSWER-RESTORED", usage: { inputTokens: 1, outputTokens: 1 } });
    const { bodies } = await turn(deviceA, "AFTER-RESTORE", state.one);
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toContain("TURN-ONE-TEXT");
    expect(bodies[0]).toContain("ANSWER-ONE");
    expect(bodies[0]).toContain("AFTER-RESTORE");
    for (const gone of ["TURN-TWO-TEXT", "ANSWER-TWO", "FILE-CONTENT-FROM-READ", "TURN-THREE-TEXT", "ANSWER-THREE"]) expect(bodies[0]).not.toContain(gone);
  });

  it("edit and resend: turn three edited replaces the original, also for the turn after it", async () => {
    h.sim.enqueue({ text: "ANSWER-EDITED", usage: { inputTokens: 1, outputTokens: 1 } });
    const edited = await turn(deviceA, "EDITED-THREE", state.two);
    expect(edited.bodies[0]).toContain("TURN-TWO-TEXT");
    expect(edited.bodies[0]).toContain("FILE-CONTENT-FROM-READ");
    expect(edited.bodies[0]).toContain("EDITED-THREE");
    expect(edited.bodies[0]).not.toContain("TURN-THREE-TEXT");
    expect(edited.bodies[0]).not.toContain("AFTER-RESTORE");
    h.sim.enqueue({ text: "ANSWER-FOUR", usage: { inputTokens: 1, outputTokens: 1 } });
    const next = await turn(deviceA, "TURN-FOUR-TEXT", edited.r.lastCheckpoint);
    expect(next.bodies[0]).toContain("EDITED-THREE");
    expect(next.bodies[0]).toContain("ANSWER-EDITED");
    for (const gone of ["TURN-THREE-TEXT", "ANSWER-THREE", "AFTER-RESTORE"]) expect(next.bodies[0]).not.toContain(gone);
  });

  it("another device continues from device A's checkpoint: the stored content of exactly those turns", async () => {
    const deviceB = createCursorClient({ baseUrl: h.gw.url });
    h.sim.enqueue({ text: "ANSWER-ON-B", usage: { inputTokens: 1, outputTokens: 1 } });
    // Device B holds only the checkpoint (no blobs, no pre_fetched_blobs): the gateway resolves
    // the turns from the blobs it stored and reads their full content (the Read result too).
    const { bodies } = await turn(deviceB, "FROM-DEVICE-B", state.three, new Map());
    for (const kept of ["TURN-ONE-TEXT", "TURN-TWO-TEXT", "FILE-CONTENT-FROM-READ", "ANSWER-TWO", "TURN-THREE-TEXT", "ANSWER-THREE", "FROM-DEVICE-B"]) {
      expect(bodies[0]).toContain(kept);
    }
    for (const gone of ["AFTER-RESTORE", "EDITED-THREE", "TURN-FOUR-TEXT"]) expect(bodies[0]).not.toContain(gone);
  });
});
