/**
 * The saved run snapshot (docs/architecture.md "Takeover state"): steps as bytes beside a JSON
 * header, round-tripping exactly; an older worker's JSON snapshot (base64 steps) still decodes;
 * what is not a snapshot of a known version reads as none.
 */
import { AgentMode } from "@byok/wire";
import { DEFAULT_RUN_POLICY, initialRunState, restoreRunState, snapshotRunState, type RunState } from "@byok/protocol";
import { describe, expect, it } from "vitest";
import { decodeSnapshot, encodeSnapshot, type RunSnapshot } from "../src/snapshot.js";

const assistant = (text: string): RunState["steps"][number] => ({ case: "assistantMessage", value: { $typeName: "agent.v1.AssistantMessage", text } });

function runSnapshot(steps: RunState["steps"]): RunSnapshot {
  const state: RunState = { ...initialRunState("r-1", 1), mode: AgentMode.PLAN, steps };
  return {
    v: 2, inputIndex: 3, runRequestIndex: 0, outputFrames: 17, retries: { connect: 1, stream: 0 }, targetIndex: 1,
    state: snapshotRunState(state),
    content: { history: [{ role: "user", text: "ghost-mode prompt ✓" }] } as unknown as RunSnapshot["content"],
    meterTicket: { lease: "l-1" },
  };
}

const restored = (s: RunSnapshot) => restoreRunState("r-1", 2, DEFAULT_RUN_POLICY, s.state, undefined);

describe("run snapshot format", () => {
  it("round-trips every field, the steps as bytes outside the JSON", () => {
    const steps = [assistant("first ✓ with \"quotes\" and \u0000 bytes"), assistant("x".repeat(70_000)), assistant("")];
    const snap = runSnapshot(steps);
    const bytes = encodeSnapshot(snap);
    expect(bytes[0]).toBe(0x01);
    // The long step is not base64 (70,000 bytes would be 93,336 as base64).
    expect(bytes.byteLength).toBeLessThan(72_000);
    const back = decodeSnapshot(bytes)!;
    expect(back.state.steps).toEqual(snap.state.steps);
    expect({ ...back, state: { ...back.state, steps: [] } }).toEqual({ ...snap, state: { ...snap.state, steps: [] } });
    expect(restored(back).steps).toEqual(steps);
    expect(restored(back).mode).toBe(AgentMode.PLAN);
  });

  it("decodes an older worker's JSON snapshot with base64 steps", () => {
    const steps = [assistant("said before the upgrade"), assistant("and more")];
    const snap = runSnapshot(steps);
    const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");
    // What encodeSnapshot wrote before the steps moved out of the JSON.
    const old = new TextEncoder().encode(JSON.stringify({ ...snap, state: { ...snap.state, steps: snap.state.steps.map(b64) } }));
    const back = decodeSnapshot(old)!;
    expect(back.inputIndex).toBe(3);
    expect(back.content).toEqual(snap.content);
    expect(restored(back).steps).toEqual(steps);
  });

  it("reads nothing, an empty save and unknown versions as no snapshot, and refuses a cut one", () => {
    expect(decodeSnapshot(undefined)).toBeUndefined();
    expect(decodeSnapshot(new Uint8Array(0))).toBeUndefined();
    expect(decodeSnapshot(new TextEncoder().encode(JSON.stringify({ v: 1, state: {} })))).toBeUndefined();
    expect(decodeSnapshot(Uint8Array.of(0x09, 0, 0, 0, 0))).toBeUndefined();
    const bytes = encodeSnapshot(runSnapshot([assistant("a step that gets cut")]));
    expect(() => decodeSnapshot(bytes.subarray(0, bytes.byteLength - 3))).toThrow(/header accounts for/);
  });
});
