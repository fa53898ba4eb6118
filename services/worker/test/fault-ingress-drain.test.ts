// SIGTERM drain of an ingress replica with real processes: readiness fails first, new RunSSE
// streams are refused with a retryable `unavailable`, the open stream keeps flowing for the
// grace, then it is cut and the client resumes on the other replica with nothing lost or repeated.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectItems, createCursorClient, runRequestMessage } from "@byok/testing";
import type { AgentServerMessage } from "@byok/wire";
import { decodeFrames, encodeFrames, isText, xrangeFrames } from "./frames.js";
import { logRecords, SERVICE_START_MS, startTestCluster, TEST_MODEL, type TestCluster } from "./process-harness.js";

const GRACE_MS = 1_500;
/** The harness's start-up bound (the services start in parallel; each test spawns one more) plus the turn. */
const BOUND_MS = SERVICE_START_MS + 30_000;

describe("ingress SIGTERM drain (real processes)", () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await startTestCluster({ ingress: 1, workers: 1 });
  }, BOUND_MS);
  afterAll(async () => {
    await c?.close();
  });

  it("drains: readiness fails first, no new streams, the open one continues for the grace, then resumes elsewhere without a gap", async () => {
    const draining = await c.spawn("ingress", { GATEWAY_DRAIN_GRACE_MS: String(GRACE_MS) });
    const other = c.ingress[0]!;
    // 60 chunks 100 ms apart: the turn outlasts the grace.
    c.sim.enqueue({ text: Array.from({ length: 60 }, (_, i) => `d${i} `), chunkDelayMs: 100 });
    const requestId = `drain-${randomUUID()}`;
    const ref = { tenantId: "default", requestId };
    const a = createCursorClient({ baseUrl: draining.url, authToken: c.authToken });
    const b = createCursorClient({ baseUrl: other.url, authToken: c.authToken });
    const res = await a.runSse(requestId);
    expect((await a.append(requestId, 1, runRequestMessage({ text: "go", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }))).ok).toBe(true);

    const before: AgentServerMessage[] = [];
    let framesAfterSigterm = 0;
    let sigtermAt = 0;
    let probes: Promise<{ ready: number; newStream: Awaited<ReturnType<typeof a.collect>> }> | undefined;
    let ended: "cut" | "end-stream" | undefined;
    try {
      for await (const item of res.frames) {
        if (item.kind !== "message") {
          ended = "end-stream";
          continue;
        }
        const m = item.message;
        if (m.message.case === "interactionUpdate" && m.message.value.message.case === "heartbeat") continue;
        before.push(m);
        if (sigtermAt) framesAfterSigterm++;
        if (!sigtermAt && before.filter(isText).length === 3) {
          sigtermAt = Date.now();
          draining.signal("SIGTERM");
          await draining.waitForLine(/"draining"/, 5_000);
          // While the open stream still flows: readiness fails, a new stream is refused at once.
          probes = (async () => ({
            ready: (await fetch(`${draining.url}/readyz`)).status,
            newStream: await a.collect(`drain-new-${randomUUID()}`),
          }))();
        }
      }
    } catch {
      ended = "cut";
    }
    const cutAt = Date.now();
    expect(ended).toBe("cut");
    const p = await probes!;
    expect(p.ready).toBe(503);
    expect(p.newStream.end).toMatchObject({ ok: false, code: "unavailable" });
    if (p.newStream.end && !p.newStream.end.ok) {
      expect(p.newStream.end.errorDetails[0]?.details?.isRetryable).toBe(true);
      expect(p.newStream.end.message).toMatch(/shutting down; reconnect/);
    }
    // The open stream kept flowing during the grace, and was cut only after it.
    expect(framesAfterSigterm).toBeGreaterThan(3);
    expect(cutAt - sigtermAt).toBeGreaterThanOrEqual(GRACE_MS - 100);
    expect(await draining.exited).toBe(0);
    expect(logRecords(draining).find((r) => r.msg === "drained")).toMatchObject({ cut: 1 });

    // The client resumes on the other replica after the frames it has: the rest, then the end.
    const resumed = await b.collect(requestId, { resumeAfter: before.length });
    expect(resumed.end).toEqual({ ok: true });
    const stored = decodeFrames(await xrangeFrames(c.redis, c.keyPrefix, ref, 1));
    expect(encodeFrames([...before, ...resumed.messages])).toEqual(encodeFrames(stored));
    // Deltas may be coalesced into fewer frames (docs/benchmarks.md "Delta coalescing"); the text is whole.
    const text = (ms: AgentServerMessage[]) => ms.filter(isText).map((m) => (m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta" ? m.message.value.message.value.text : "")).join("");
    expect(text(stored)).toBe(Array.from({ length: 60 }, (_, i) => `d${i} `).join(""));
  }, BOUND_MS);

  it("a stream that ends within the grace ends {} and nothing is cut", async () => {
    const draining = await c.spawn("ingress", { GATEWAY_DRAIN_GRACE_MS: "20000" });
    c.sim.enqueue({ text: Array.from({ length: 10 }, (_, i) => `q${i} `), chunkDelayMs: 100 });
    const requestId = `drain-short-${randomUUID()}`;
    const a = createCursorClient({ baseUrl: draining.url, authToken: c.authToken });
    const res = await a.runSse(requestId); // headers came: the stream is open on this replica
    expect((await a.append(requestId, 1, runRequestMessage({ text: "go", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }))).ok).toBe(true);
    draining.signal("SIGTERM");
    const out = await collectItems(res.frames);
    expect(out.end).toEqual({ ok: true });
    expect(out.textDeltas).toBe(Array.from({ length: 10 }, (_, i) => `q${i} `).join(""));
    expect(await draining.exited).toBe(0);
    expect(logRecords(draining).find((r) => r.msg === "drained")).toMatchObject({ cut: 0 });
  }, BOUND_MS);
});
