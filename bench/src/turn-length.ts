// `npm run bench:turn-length`: what one checkpoint and one takeover snapshot of a turn cost the
// worker as the turn grows. Every checkpoint carries the turn's blobs (buildTurnBlobs: each step
// serialized and hashed) and every snapshot its steps (snapshotRunState, then encodeSnapshot as the
// engine saves it, libs/agent/src/snapshot.ts); an agent turn makes one of each per tool call, so a cost
// that grows with the turn makes the turn quadratic. Steps here are assistant messages of
// BENCH_STEP_BYTES each (a stand-in for tool results of that size). Pure CPU, one process; the
// snapshot row also gives the saved snapshot's size. Not a test.
//   BENCH_STEPS (10,30,100)  BENCH_STEP_BYTES (20000)  BENCH_ROUNDS (200)
import { encodeSnapshot } from "@byok/agent";
import { buildTurnBlobs, initialRunState, snapshotRunState, type RunState } from "@byok/protocol";
import { AgentMode } from "@byok/wire";
import { round } from "./stats.js";

const STEPS = (process.env.BENCH_STEPS ?? "10,30,100").split(",").map(Number);
const STEP_BYTES = Number(process.env.BENCH_STEP_BYTES ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 200);

const words = "lorem ipsum dolor sit amet consectetur adipiscing elit ";

/** Mean ms per call of `fn` over ROUNDS calls, after ROUNDS / 10 warm-up calls. */
function msPerCall(fn: () => unknown): number {
  for (let i = 0; i < ROUNDS / 10; i++) fn();
  const t = performance.now();
  for (let i = 0; i < ROUNDS; i++) fn();
  return round((performance.now() - t) / ROUNDS, 3);
}

const rows = STEPS.map((n) => {
  const steps: RunState["steps"] = Array.from({ length: n }, (_, i) => ({
    case: "assistantMessage" as const,
    value: { $typeName: "agent.v1.AssistantMessage" as const, text: `${i} ${words.repeat(Math.ceil(STEP_BYTES / words.length))}`.slice(0, STEP_BYTES) },
  }));
  const state: RunState = { ...initialRunState("bench-request", 1), steps };
  const turn = { requestId: "bench-request", userText: "bench", messageId: "bench-message", mode: AgentMode.AGENT, steps: [...steps] };
  const snapshot = () => encodeSnapshot({ v: 2, inputIndex: 1, runRequestIndex: 0, outputFrames: n, retries: { connect: 0, stream: 0 }, targetIndex: 0, state: snapshotRunState(state) });
  return {
    steps: n,
    stepBytes: STEP_BYTES,
    checkpointBlobsMs: msPerCall(() => buildTurnBlobs(turn)),
    snapshotMs: msPerCall(snapshot),
    snapshotBytes: snapshot().byteLength,
  };
});
console.log(JSON.stringify({ node: process.version, rounds: ROUNDS, rows }, null, 2));
