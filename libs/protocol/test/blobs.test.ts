/**
 * Turn blobs (docs/protocol.md "Checkpoint layout"): a step is serialized and hashed once per
 * step object however many checkpoints and snapshots carry it (docs/benchmarks.md "Steps
 * serialized once"), and what the cache returns is exactly a fresh serialization.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AgentMode, ConversationStepSchema, ConversationTurnStructureSchema } from "@byok/wire";
import { describe, expect, it } from "vitest";
import { blobId, buildTurnBlobs, DEFAULT_RUN_POLICY, initialRunState, restoreRunState, snapshotRunState, stepBlob, type RunState } from "../src/index.js";

const assistant = (text: string): RunState["steps"][number] => ({ case: "assistantMessage", value: { $typeName: "agent.v1.AssistantMessage", text } });

const turn = (steps: RunState["steps"]) => ({ requestId: "r-1", userText: "hello", messageId: "m-1", mode: AgentMode.AGENT, steps: [...steps] });

describe("turn blobs", () => {
  it("serializes and hashes a step once, however many checkpoints carry it", () => {
    const first = assistant("the first answer");
    const second = assistant("the second answer");
    const a = buildTurnBlobs(turn([first]));
    const b = buildTurnBlobs(turn([first, second]));
    // blobs: user message, the steps, the turn structure
    expect(b.blobs[1]!.data).toBe(a.blobs[1]!.data);
    expect(b.blobs[1]!.id).toBe(a.blobs[1]!.id);
    expect(stepBlob(second).data).toBe(b.blobs[2]!.data);
  });

  it("gives exactly a fresh serialization, and equal steps the same blob id", () => {
    const step = assistant("a step with ünïcödé and \u{1F600}");
    const fresh = toBinary(ConversationStepSchema, create(ConversationStepSchema, { message: step }));
    expect(stepBlob(step).data).toEqual(fresh);
    expect(stepBlob(step).id).toEqual(blobId(fresh));
    const twin = assistant("a step with ünïcödé and \u{1F600}");
    expect(stepBlob(twin).id).toEqual(stepBlob(step).id);
    const { blobs, turnId } = buildTurnBlobs(turn([step]));
    const structure = fromBinary(ConversationTurnStructureSchema, blobs.at(-1)!.data);
    expect(turnId).toEqual(blobs.at(-1)!.id);
    expect(structure.turn.case === "agentConversationTurn" && structure.turn.value.steps).toEqual([stepBlob(step).id]);
  });

  it("round-trips the steps through a takeover snapshot", () => {
    const steps = [assistant("one"), assistant("two")];
    const state: RunState = { ...initialRunState("r-1", 1), steps };
    const fresh = snapshotRunState(state);
    const snap = { ...(JSON.parse(JSON.stringify({ ...fresh, steps: [] })) as typeof fresh), steps: fresh.steps.map((b) => b.slice()) };
    const restored = restoreRunState("r-1", 2, DEFAULT_RUN_POLICY, snap, undefined);
    expect(restored.steps).toEqual(steps);
    // Restored steps are new objects: their blobs are computed anew and come out the same.
    expect(stepBlob(restored.steps[1]!).id).toEqual(stepBlob(steps[1]!).id);
  });
});
