// Stream lifecycle of issue 2: waiting for a run, heartbeats, not_found, reused request ids,
// reconnect grace, cancel, provider errors, routing by client credentials.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cancelMessage, createCursorClient, heartbeatMessage, kvSetBlobResultMessage, runRequestMessage, type CursorClient } from "@byok/testing";
import { ErrorDetails_Error } from "@byok/wire";
import { startHarness, TEST_MODEL, type Harness } from "./harness.js";

describe("stream lifecycle", () => {
  let h: Harness;
  let client: CursorClient;
  beforeAll(async () => {
    h = await startHarness({
      GATEWAY_HEARTBEAT_MS: "100",
      GATEWAY_NOT_FOUND_WAIT_MS: "400",
      GATEWAY_RECONNECT_GRACE_MS: "300",
      GATEWAY_NEW_GENERATION_WAIT_MS: "300",
    });
    client = createCursorClient({ baseUrl: h.gw.url });
  });
  afterAll(async () => h.close());

  it("ends a RunSSE for a request that never appears with not_found after the wait, with heartbeats meanwhile", async () => {
    const started = Date.now();
    const r = await client.collect("never-appears");
    expect(r.end).toMatchObject({ ok: false, code: "not_found" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(r.heartbeats).toBeGreaterThanOrEqual(1);
  });

  it("keeps a RunSSE that arrives before the first BidiAppend open, sending heartbeats during silence", async () => {
    h.sim.enqueue({ text: "late but fine", usage: { inputTokens: 2, outputTokens: 3 }, firstByteDelayMs: 350 });
    const stream = client.collect("early-reader");
    await new Promise((r) => setTimeout(r, 150));
    expect(await client.append("early-reader", 1, runRequestMessage({ text: "hi", conversationId: "c-early", modelId: TEST_MODEL }))).toEqual({ ok: true });
    const r = await stream;
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toBe("late but fine");
    expect(r.heartbeats).toBeGreaterThanOrEqual(1);
    expect(r.turnEnded?.outputTokens).toBe(3n);
  });

  it("serves a reused request id's new generation, and replays the ended one when none starts", async () => {
    h.sim.enqueue({ text: "turn one", usage: { inputTokens: 1, outputTokens: 1 } }, { text: "turn two", usage: { inputTokens: 1, outputTokens: 1 } });
    const first = await client.runTurn({ requestId: "reused", message: runRequestMessage({ text: "one", conversationId: "c-reuse", modelId: TEST_MODEL }) });
    expect(first.textDeltas).toBe("turn one");
    // A reconnect after the end, with no new generation: replays the ended one.
    const replay = await client.collect("reused");
    expect(replay.textDeltas).toBe("turn one");
    // Cursor reuses the request id for the next turn: seqno 1 starts generation 2.
    const second = await client.runTurn({ requestId: "reused", message: runRequestMessage({ text: "two", conversationId: "c-reuse", modelId: TEST_MODEL }) });
    expect(second.end).toEqual({ ok: true });
    expect(second.textDeltas).toBe("turn two");
    // The model saw the first turn as history.
    const body = JSON.stringify(h.sim.requests.at(-1)!.body);
    expect(body).toContain("turn one");
    expect(body).toContain("two");
  });

  it("cancels the run when its last reader is gone for longer than the grace, closing the provider stream", async () => {
    h.sim.enqueue({ text: ["slow ", "answer ", "never ", "finished"], chunkDelayMs: 400, usage: { inputTokens: 1, outputTokens: 1 } });
    const before = h.sim.requests.length;
    const controller = new AbortController();
    const stream = await client.runSse("reader-gone", { signal: controller.signal });
    await client.append("reader-gone", 1, runRequestMessage({ text: "hi", conversationId: "c-gone", modelId: TEST_MODEL }));
    await h.sim.waitForRequest(before);
    let seqno = 2;
    for await (const item of stream.frames) {
      if (item.kind !== "message") continue;
      const m = item.message.message;
      // Like Cursor, store checkpoint blobs; then leave once text is flowing.
      if (m.case === "kvServerMessage") await client.append("reader-gone", seqno++, kvSetBlobResultMessage(m.value.id));
      if (m.case === "interactionUpdate" && m.value.message.case === "textDelta") break;
    }
    controller.abort();
    const req = await h.sim.waitForEnd(before, 5_000);
    expect(req.clientDisconnected).toBe(true);
    const after = await client.collect("reader-gone");
    expect(after.end).toMatchObject({ ok: false, code: "canceled" });
    expect(after.turnEnded).toBeUndefined();
  });

  it("cancels on cancel_action: aborts the provider request, keeps partial output, ends canceled", async () => {
    h.sim.enqueue({ text: ["first ", "second ", "third"], chunkDelayMs: 300, usage: { inputTokens: 1, outputTokens: 1 } });
    const before = h.sim.requests.length;
    let canceled = false;
    const turn = await client.runTurn({
      requestId: "cancel-action",
      message: runRequestMessage({ text: "go", conversationId: "c-cancel", modelId: TEST_MODEL }),
      onMessage: async (m, t) => {
        if (!canceled && m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta") {
          canceled = true;
          await t.append(cancelMessage("user pressed stop"));
        }
      },
    });
    expect(turn.end).toMatchObject({ ok: false, code: "canceled" });
    expect(turn.textDeltas.startsWith("first")).toBe(true);
    expect(turn.lastCheckpoint).toBeDefined();
    expect((await h.sim.waitForEnd(before, 5_000)).clientDisconnected).toBe(true);
  });

  it("ends with unavailable + ERROR_PROVIDER_ERROR after the provider keeps failing", async () => {
    const failing = { httpError: { status: 503, body: { error: { message: "upstream overloaded", type: "server_error" } } } };
    h.sim.enqueue(...Array.from({ length: 5 }, () => failing));
    const r = await client.runTurn({ requestId: "provider-down", message: runRequestMessage({ text: "hi", conversationId: "c-down", modelId: TEST_MODEL }) });
    expect(r.end).toMatchObject({ ok: false, code: "unavailable" });
    if (r.end?.ok !== false) throw new Error("expected an error end");
    expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.PROVIDER_ERROR);
    expect(r.end.errorDetails[0]?.details?.isRetryable).toBe(true);
  });

  it("ends with invalid_argument + ERROR_BAD_MODEL_NAME for a model with no route and no credentials", async () => {
    const r = await client.runTurn({ requestId: "no-route", message: runRequestMessage({ text: "hi", conversationId: "c-nr", modelId: "mystery-model" }) });
    expect(r.end).toMatchObject({ ok: false, code: "invalid_argument" });
    if (r.end?.ok !== false) throw new Error("expected an error end");
    expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.BAD_MODEL_NAME);
  });

  it("serves a model with no route from the client's own api_key_credentials (BYOK)", async () => {
    h.sim.enqueue({ text: "byok works", usage: { inputTokens: 5, outputTokens: 2 } });
    const clientKey = "sk-client-own-key-9876543210";
    const before = h.sim.requests.length;
    const r = await client.runTurn({
      requestId: "byok",
      message: runRequestMessage({
        text: "hi", conversationId: "c-byok", modelId: "my-local-llm",
        credentials: { apiKey: clientKey, baseUrl: `${h.sim.url}/v1` },
      }),
    });
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toBe("byok works");
    const seen = h.sim.requests[before]!;
    expect(seen.headers["authorization"]).toBe(`Bearer ${clientKey}`);
    expect(JSON.stringify(seen.body)).toContain("my-local-llm");
  });

  it("compresses large frames per envelope when the client accepts gzip, and the client reads them", async () => {
    const big = "x".repeat(3000);
    h.sim.enqueue({ text: [big, " small"], usage: { inputTokens: 1, outputTokens: 1 } });
    const r = await client.runTurn({
      requestId: "gzip-frames",
      message: runRequestMessage({ text: "long answer", conversationId: "c-gzip", modelId: TEST_MODEL }),
      runSse: { acceptCompression: true },
    });
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toBe(`${big} small`);
    // Replayed: the big frame travels gzip-compressed (flag 0x01), the small ones plain.
    const replay = await client.runSse("gzip-frames", { acceptCompression: true });
    const flags: number[] = [];
    for await (const item of replay.frames) if (item.kind === "message") flags.push(item.flags);
    expect(flags.some((f) => (f & 0x01) === 1)).toBe(true);
    expect(flags.some((f) => f === 0)).toBe(true);
  });

  it("accepts client heartbeats during a run", async () => {
    h.sim.enqueue({ text: "ok", usage: { inputTokens: 1, outputTokens: 1 }, firstByteDelayMs: 200 });
    let sent = false;
    const r = await client.runTurn({
      requestId: "client-hb",
      message: runRequestMessage({ text: "hi", conversationId: "c-hb", modelId: TEST_MODEL }),
      onMessage: async (m, t) => {
        if (!sent && m.message.case === "conversationCheckpointUpdate") {
          sent = true;
          expect(await t.append(heartbeatMessage())).toEqual({ ok: true });
        }
      },
    });
    expect(r.end).toEqual({ ok: true });
  });
});
