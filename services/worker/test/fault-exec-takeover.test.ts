// Fault test with real processes (issue 5 §6): a run waiting on an exec result whose worker is
// killed. The client's result is sent while the run is being taken over; it lands in the
// generation's input stream, the new owner restores the snapshot (pending bridge ids kept),
// reads the unread input, matches the result and completes the turn.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { decodeSnapshot, type RunSnapshot } from "@byok/agent";
import { requestKeys } from "@byok/bus";
import { createCursorClient, runRequestMessage } from "@byok/testing";
import { AgentClientMessageSchema, type AgentServerMessage, type ExecServerMessage } from "@byok/wire";
import { decodeFrames, describeFrame, encodeFrames, jobOwner, xrangeFrames } from "./frames.js";
import { logRecords, startTestCluster, TEST_MODEL, waitFor, type ServiceProcess, type TestCluster } from "./process-harness.js";

/** The part of the run snapshot (`g<N>:snap`, JSON) this test looks at. */
function readResult(id: number, execId: string) {
  return create(AgentClientMessageSchema, {
    message: {
      case: "execClientMessage",
      value: {
        id,
        execId,
        message: {
          case: "readResult",
          value: {
            result: {
              case: "success",
              value: { path: "a.txt", totalLines: 1, fileSize: 5n, truncated: false, rangeApplied: false, output: { case: "content", value: "hello" } },
            },
          },
        },
      },
    },
  });
}

describe("exec result during a takeover (real processes)", () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await startTestCluster({ ingress: 1, workers: 2 });
  });
  afterAll(async () => {
    await c?.close();
  });

  it("kill -9 of the worker a run waits on: the result sent during the takeover reaches the new owner and the turn completes", async () => {
    const requestId = `exec-takeover-${randomUUID()}`;
    const ref = { tenantId: "default", requestId };
    const keys = requestKeys(c.keyPrefix, ref).generation(1);
    const before = c.sim.requests.length;
    c.sim.enqueue(
      { toolCalls: [{ id: "functions.Read:0", name: "Read", arguments: JSON.stringify({ path: "a.txt" }) }], usage: { inputTokens: 10, outputTokens: 3 } },
      { text: "final answer", usage: { inputTokens: 20, outputTokens: 2 } },
    );
    const reader = createCursorClient({ baseUrl: c.ingress[0]!.url, authToken: c.authToken });
    const execs: ExecServerMessage[] = [];
    let killed: ServiceProcess | undefined;
    let survivor: ServiceProcess | undefined;
    let snapAtKill: RunSnapshot | undefined;
    let framesAtKill = 0;
    let resultAppend: Awaited<ReturnType<typeof reader.append>> | undefined;
    let seen = 0;
    let epochAtAnswer: string | null = null;
    let inputAtAnswer = 0;

    const result = await reader.runTurn({
      requestId,
      message: runRequestMessage({ text: "read a.txt", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }),
      onMessage: async (m: AgentServerMessage, t) => {
        seen++;
        if (m.message.case !== "execServerMessage") return;
        const exec = m.message.value;
        execs.push(exec);
        if (killed) return; // a re-sent exec is recorded (and asserted against) but not answered twice
        expect(exec.message.case).toBe("readArgs");
        // The owner's snapshot already records the pending exec (a frame is appended before the
        // snapshot that counts it; the snapshot is saved right after that append).
        snapAtKill = await waitFor(
          async () => {
            const s = decodeSnapshot((await c.redis.getBuffer(keys.snapshot)) ?? undefined);
            return s && s.state.phase === "tools" && s.outputFrames >= seen ? s : undefined;
          },
          10_000,
          "snapshot with the pending exec",
        );
        framesAtKill = seen;
        const ownerName = await waitFor(() => jobOwner(c.redis, c.queuePrefix, ref, 1), 10_000, "job owner");
        killed = c.workers.find((w) => w.name === ownerName);
        if (!killed) throw new Error(`owner ${ownerName} is not one of the workers`);
        survivor = c.workers.find((w) => w !== killed);
        // The survivor is paused across the kill and the answer, so no new owner can claim the
        // run before the result lands, however slow the machine (its failure detection would
        // otherwise take the run over within ~1 s of the kill, racing the append).
        survivor!.signal("SIGSTOP");
        try {
          killed.signal("SIGKILL");
          await killed.exited;
          // Now, while nobody owns the run, the client answers.
          resultAppend = await t.append(readResult(exec.id, exec.execId));
          // It landed in the input stream before any new owner claimed the generation.
          epochAtAnswer = await c.redis.get(keys.epoch);
          inputAtAnswer = await c.redis.xlen(keys.input);
        } finally {
          survivor!.signal("SIGCONT");
        }
      },
    });

    // The run was taken over by the surviving worker, from the snapshot that had the pending exec.
    expect(killed).toBeDefined();
    expect(resultAppend).toEqual({ ok: true });
    const takeover = logRecords(survivor!).find((r) => r.msg === "took over run" && r.requestId === requestId);
    expect(takeover).toMatchObject({ phase: "tools", inputIndex: snapAtKill!.inputIndex });
    // The result was appended while the killed worker's claim (epoch 1) was still the latest one,
    // as an input entry the snapshot had not consumed: the new owner read it as unread input.
    expect(epochAtAnswer).toBe("1");
    expect(await c.redis.get(keys.epoch)).toBe("2");
    expect(inputAtAnswer).toBeGreaterThan(snapAtKill!.inputIndex);
    const pending = snapAtKill!.state.tools!.calls.find((x) => x.call.name === "Read");
    expect(pending?.done).toBe(false);
    expect(pending?.bridge).toMatchObject({ kind: "exec", id: execs[0]!.id, execId: execs[0]!.execId });

    // The turn completed with the model's final text.
    expect(result.end).toEqual({ ok: true });
    expect(result.turnEnded).toBeDefined();
    expect(result.textDeltas).toContain("final answer");
    const got = result.messages.map(describeFrame);
    expect(got.at(-1)).toBe("turnEnded");
    // No re-run of the first pass: the run was waiting on the client, not on the model, so the
    // new owner sends no takeover notice and does not call the model again before the result.
    expect(got.some((f) => f.startsWith("notice:"))).toBe(false);
    // The exec was sent once; the client never had to answer it again.
    expect(execs).toHaveLength(1);
    // The read completed for the UI after the takeover.
    const completedAt = got.indexOf("toolCallCompleted");
    expect(completedAt).toBeGreaterThanOrEqual(framesAtKill);
    expect(got.slice(0, framesAtKill)).not.toContain("toolCallCompleted");

    // The model saw the result: exactly two passes, the second one carries the file content.
    await c.sim.waitForEnd(before + 1, 10_000);
    const bodies = c.sim.requests.slice(before).map((q) => JSON.stringify(q.body));
    expect(bodies).toHaveLength(2);
    expect(bodies[0]).not.toContain("hello");
    expect(bodies[1]).toContain("hello");

    // What the client received is exactly the output stream, in order (nothing lost or repeated).
    const stored = decodeFrames(await xrangeFrames(c.redis, c.keyPrefix, ref, 1));
    expect(encodeFrames(result.messages)).toEqual(encodeFrames(stored));
  }, 90_000);
});
