// Takeover of a run whose content must not reach the store (ghost mode, retention `none` /
// `metadata`): the history the first owner held in memory travels in its snapshot, so the new
// owner's re-run sends the provider the same messages as the first attempt — on the memory bus
// and on the Redis bus — and the store still holds no content.
import { randomUUID } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { runRequestMessage } from "@byok/testing";
import { AgentClientMessageSchema, AgentServerMessageSchema } from "@byok/wire";
import type { ContentMode } from "@byok/store";
import { ackKv, describeFrame, suiteBus, suiteWorld, testEngine, waitFor } from "./engine-fixture.js";

// The simulator and the PGlite store of one engine world; each describe block brings its own bus.
const world = suiteWorld();

describe.each(["memory", "redis"] as const)("takeover keeps the prompt of a run that stores no content (%s bus)", (busKind) => {
  const busOf = suiteBus(busKind, "privacy");

  // ghost mode and retention `none` → ephemeral; retention `metadata` → ephemeral_keep_conversation.
  it.each(["ephemeral", "ephemeral_keep_conversation", "store"] as const)("content mode %s", async (mode: ContentMode) => {
    const bus = busOf();
    const conversationId = `c-${mode}-${randomUUID().slice(0, 8)}`;
    const ref = { tenantId: "t", requestId: `privacy-${randomUUID()}` };
    world.sim.enqueue(
      { text: ["cut-a ", "cut-b ", "cut-c ", "cut-d"], chunkDelayMs: 150, usage: { inputTokens: 5, outputTokens: 4 } },
      { text: ["re-run"], usage: { inputTokens: 6, outputTokens: 2 } },
    );
    const before = world.sim.requests.length;
    const engine = () => testEngine(world.sim, bus, world.store, { content: { modeFor: async () => mode } });
    const msg = runRequestMessage({ text: `the user's question (${mode})`, conversationId, modelId: "m" });
    await bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, create(AgentClientMessageSchema, msg)), {});
    const stopAcks = ackKv(bus, ref);
    let cutText = "";
    try {
      const first = new AbortController();
      const firstRun = engine().runGeneration(ref, 1, first.signal);
      // Two text frames out: the second streamed after the pass's last snapshot (its first output).
      await waitFor(async () =>
        (await bus.readOutput(ref, 1, 0, 100)).entries.filter((e) => describeFrame(fromBinary(AgentServerMessageSchema, e.frame)).startsWith("text:")).length >= 2,
      );
      first.abort(); // the first owner stops mid-stream, as a killed worker would
      await firstRun;

      await engine().runGeneration(ref, 1);
      const out = await bus.readOutput(ref, 1, 0, 1000);
      expect(out.end).toEqual({ ok: true });
      const frames = out.entries.map((e) => describeFrame(fromBinary(AgentServerMessageSchema, e.frame)));
      expect(frames.some((f) => f.startsWith("notice:"))).toBe(true);
      expect(frames).toContain("text:re-run");
      cutText = frames.slice(0, frames.findIndex((f) => f.startsWith("notice:"))).filter((f) => f.startsWith("text:")).map((f) => f.slice(5)).join(" ");
    } finally {
      stopAcks();
    }

    const [firstAttempt, reRun] = world.sim.requests.slice(before).map((r) => (r.body as { messages: unknown[] }).messages);
    expect(JSON.stringify(firstAttempt)).toContain(`the user's question (${mode})`);
    expect(reRun).toEqual(firstAttempt);

    const history = await world.store.listHistory("t", conversationId);
    const conversation = await world.store.getConversation("t", conversationId);
    if (mode === "store") {
      expect(history.map((h) => h.kind)).toEqual(["user", "assistant", "assistant"]);
      // The cut attempt's entry holds all the text the client was sent, read back from the output.
      expect(cutText).toMatch(/^cut-a cut-b/);
      expect((history[1]!.body as { text: string }).text.trim()).toBe(cutText);
      expect(conversation).toBeDefined();
    } else {
      expect(history).toEqual([]);
      expect(conversation === undefined).toBe(mode === "ephemeral");
    }
  });
});
