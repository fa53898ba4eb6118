import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Stream as OpenAIStream, _iterSSEMessages as openaiRawEvents } from "openai/core/streaming";
import { APIError as OpenAIAPIError } from "openai";
import { Stream as AnthropicStream } from "@anthropic-ai/sdk/core/streaming";
import { APIError as AnthropicAPIError } from "@anthropic-ai/sdk";
import { SseParser, sseItems, type SseDialect, type ServerSentEvent } from "./sse.js";
import { OPENAI_SSE } from "./openai-stream.js";
import { ANTHROPIC_SSE } from "../anthropic/stream.js";

/**
 * The lean SSE reader against the SDKs' own stream code on the same bytes: every fixture is cut
 * at every byte position (inside multi-byte characters and between CR and LF too) and the events
 * or items, and any error, must be the SDK's. The expectations are the SDKs' outputs, not a
 * restatement of the parser.
 */

const enc = new TextEncoder();
const HEADERS = { "content-type": "text/event-stream", "x-request-id": "req_fixture" };

function bodyOf(chunks: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (i < chunks.length) c.enqueue(chunks[i++] as Uint8Array);
      else c.close();
    },
  });
}

function responseOf(chunks: readonly Uint8Array[]): Response {
  return new Response(bodyOf(chunks), { headers: HEADERS });
}

/** Every way to cut `bytes` in two, plus one byte per chunk and the whole body in one. */
function splits(bytes: Uint8Array): Uint8Array[][] {
  const out: Uint8Array[][] = [[bytes], Array.from(bytes, (b) => Uint8Array.of(b))];
  for (let cut = 1; cut < bytes.length; cut++) out.push([bytes.subarray(0, cut), bytes.subarray(cut)]);
  return out;
}

/** Three-way cuts around every position (a CR and its LF in three different chunks, and the like). */
function threeWaySplits(bytes: Uint8Array): Uint8Array[][] {
  const out: Uint8Array[][] = [];
  for (let cut = 1; cut + 1 < bytes.length; cut++) out.push([bytes.subarray(0, cut), bytes.subarray(cut, cut + 1), bytes.subarray(cut + 1)]);
  return out;
}

function lean(chunks: readonly Uint8Array[], dispatchOpenEvent: boolean): ServerSentEvent[] {
  const parser = new SseParser();
  const out: ServerSentEvent[] = [];
  for (const c of chunks) parser.push(c, out);
  parser.end(out, dispatchOpenEvent);
  return out;
}

async function sdkRaw(chunks: readonly Uint8Array[], sdk: "openai" | "anthropic"): Promise<ServerSentEvent[]> {
  const out: ServerSentEvent[] = [];
  const events = sdk === "openai" ? openaiRawEvents(responseOf(chunks), new AbortController()) : AnthropicStream.rawEvents(responseOf(chunks));
  for await (const e of events) out.push({ event: e.event, data: e.data });
  return out;
}

interface Outcome {
  items: unknown[];
  error?: { name: string; message: string; api?: { status: unknown; error: unknown; type?: unknown; requestId: unknown } };
}

function describeError(err: unknown): Outcome["error"] {
  if (!(err instanceof Error)) return { name: typeof err, message: String(err) };
  const api = err instanceof OpenAIAPIError || err instanceof AnthropicAPIError
    ? { status: err.status, error: err.error, type: err.type, requestId: err.headers?.get("x-request-id") }
    : undefined;
  return { name: err.constructor.name, message: err.message, ...(api ? { api } : {}) };
}

async function sdkItems(chunks: readonly Uint8Array[], sdk: "openai" | "anthropic"): Promise<Outcome> {
  const items: unknown[] = [];
  const stream: AsyncIterable<unknown> =
    sdk === "openai" ? OpenAIStream.fromSSEResponse(responseOf(chunks), new AbortController(), undefined) : AnthropicStream.fromSSEResponse(responseOf(chunks), new AbortController(), undefined);
  try {
    for await (const it of stream) items.push(it);
    return { items };
  } catch (err) {
    return { items, error: describeError(err) };
  }
}

async function leanItems(chunks: readonly Uint8Array[], dialect: SseDialect<unknown>): Promise<Outcome> {
  const items: unknown[] = [];
  try {
    for await (const batch of sseItems(responseOf(chunks), new AbortController().signal, dialect)) items.push(...batch);
    return { items };
  } catch (err) {
    return { items, error: describeError(err) };
  }
}

const chunk = (content: string, extra = "") => `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}}${extra}}]}`;

/** Bodies with `\n` line ends; each is also tried with `\r\n` and `\r`. */
const LF_FIXTURES: Record<string, string> = {
  "chat stream with multi-byte text, a comment, [DONE]": [
    ": keep-alive comment",
    "",
    `data: ${chunk("h\u00e9llo ")}`,
    "",
    `data: ${chunk("\u4e16\u754c \u{1f600}")}`,
    "",
    `data:${chunk("no space after the colon")}`,
    "",
    `data: ${chunk("", ',"finish_reason":"stop"')}`,
    "",
    "data: [DONE]",
    "",
    `data: ${chunk("after done is never read")}`,
    "",
    "",
  ].join("\n"),
  "multi-line data, named events, unknown fields, a field without colon": [
    "id: 7",
    "retry: 100",
    "event: response.output_text.delta",
    'data: {"type":"response.output_text.delta",',
    'data: "delta":"two lines"}',
    "",
    "event: response.completed",
    'data:  {"type":"response.completed","note":"two spaces"}',
    "",
    "data",
    "",
    "",
  ].join("\n"),
  "an error event after a chunk": [`data: ${chunk("partial")}`, "", "event: error", 'data: {"error":{"message":"upstream died","type":"server_error","code":"server_error"}}', "", ""].join("\n"),
  "an error field in a data payload": [`data: ${chunk("partial")}`, "", 'data: {"error":{"message":"slow down","type":"rate_limit_exceeded","code":"rate_limit_exceeded"}}', "", ""].join("\n"),
  "invalid JSON mid-stream": [`data: ${chunk("ok")}`, "", 'data: {"id":"broken","choices":[{"delta":{"content":"unterminated', "", `data: ${chunk("never")}`, "", ""].join("\n"),
  "a body that ends mid-event (complete JSON, no blank line)": [`data: ${chunk("one")}`, "", `data: ${chunk("last")}`].join("\n"),
  "a body that ends mid-event (cut JSON)": [`data: ${chunk("one")}`, "", 'data: {"id":"c1","choi'].join("\n"),
  "a body that ends after a line end": [`data: ${chunk("one")}`, "", `data: ${chunk("last")}`, ""].join("\n"),
  "empty data and name-only events": ["data:", "", "event: ping", "", `data: ${chunk("x")}`, "", ""].join("\n"),
  "anthropic messages with pings and an error event": [
    "event: message_start",
    'data: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":5,"output_tokens":1}}}',
    "",
    "event: ping",
    'data: {"type": "ping"}',
    "",
    "event: content_block_delta",
    'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"caf\u00e9 \u{1f600}"}}',
    "",
    'data: {"unnamed":"skipped by anthropic"}',
    "",
    "event: error",
    'data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    "",
    "",
  ].join("\n"),
  "anthropic error event whose data is not JSON": ["event: error", "data: upstream exploded", "", ""].join("\n"),
  "anthropic invalid JSON": ["event: content_block_delta", 'data: {"type":"content_block_delta","delta":{"text":"unterminated', "", ""].join("\n"),
};

const FIXTURES: [string, Uint8Array][] = Object.entries(LF_FIXTURES).flatMap(([name, text]) => [
  [`${name} (LF)`, enc.encode(text)],
  [`${name} (CRLF)`, enc.encode(text.replaceAll("\n", "\r\n"))],
  [`${name} (CR)`, enc.encode(text.replaceAll("\n", "\r"))],
]);
FIXTURES.push(
  ["mixed line ends and a BOM", enc.encode(`\ufeffdata: ${chunk("a")}\r\n\ndata: ${chunk("b")}\r\rdata: ${chunk("c")}\n\r\n`)],
  ["a BOM on a later line", enc.encode(`data: ${chunk("a")}\n\n\ufeffdata: ${chunk("b")}\n\n`)],
  ["invalid UTF-8 bytes", Uint8Array.of(...enc.encode('data: {"t":"'), 0xc3, 0x28, 0xf0, 0x9f, ...enc.encode('"}\n\n'), ...enc.encode(`data: ${chunk("after")}\n\n`))],
);

let errorLog: ReturnType<typeof vi.spyOn>;
beforeAll(() => {
  // The SDKs log unparsable events on console when given no client.
  errorLog = vi.spyOn(console, "error").mockImplementation(() => undefined);
});
afterAll(() => errorLog.mockRestore());

describe("SseParser: the same events as the SDKs' decoders, cut anywhere", () => {
  for (const [name, bytes] of FIXTURES) {
    it(name, async () => {
      const openaiWhole = await sdkRaw([bytes], "openai");
      const anthropicWhole = await sdkRaw([bytes], "anthropic");
      expect(openaiWhole.length).toBeGreaterThan(0);
      for (const cut of [...splits(bytes), ...threeWaySplits(bytes)]) {
        expect(lean(cut, true)).toEqual(openaiWhole);
        expect(lean(cut, false)).toEqual(anthropicWhole);
      }
      // The SDKs themselves give the same events however the body is cut (spot check of the oracle).
      for (const cut of splits(bytes).filter((_, i) => i % 17 === 0)) {
        expect(await sdkRaw(cut, "openai")).toEqual(openaiWhole);
        expect(await sdkRaw(cut, "anthropic")).toEqual(anthropicWhole);
      }
    });
  }
});

describe("sseItems: the items and errors of the SDKs' Stream", () => {
  for (const [name, bytes] of FIXTURES) {
    it(name, async () => {
      for (const sdk of ["openai", "anthropic"] as const) {
        const dialect = sdk === "openai" ? OPENAI_SSE : ANTHROPIC_SSE;
        const expected = await sdkItems([bytes], sdk);
        for (const cut of splits(bytes).filter((_, i) => i % 3 === 0)) {
          expect(await leanItems(cut, dialect), `${sdk}, cut into ${cut.map((c) => c.length).join("+")}`).toEqual(expected);
        }
      }
    });
  }

  it("throws the SDKs' own error classes (the adapters' error mapping relies on them)", async () => {
    const errorEvent = enc.encode('event: error\ndata: {"error":{"message":"m","type":"server_error"}}\n\n');
    await expect(leanItems([errorEvent], OPENAI_SSE)).resolves.toMatchObject({ error: { name: "APIError" } });
    let thrown: unknown;
    try {
      for await (const _ of sseItems(responseOf([errorEvent]), new AbortController().signal, OPENAI_SSE)) void _;
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(OpenAIAPIError);
    const bad = enc.encode("data: {nope\n\n");
    await expect(leanItems([bad], OPENAI_SSE)).resolves.toMatchObject({ error: { name: "SyntaxError", message: "Error reading response: malformed server-sent event JSON." } });
    thrown = undefined;
    try {
      for await (const _ of sseItems(responseOf([enc.encode('event: error\ndata: {"type":"error","error":{"type":"api_error","message":"m"}}\n\n')]), new AbortController().signal, ANTHROPIC_SSE)) void _;
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AnthropicAPIError);
  });
});

describe("sseItems: releasing the body", () => {
  function trackedBody(chunks: readonly Uint8Array[], hold: boolean) {
    const state = { cancelled: false };
    let i = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (i < chunks.length) c.enqueue(chunks[i++] as Uint8Array);
        else if (!hold) c.close();
        else return new Promise<void>(() => undefined); // a stalled upstream
        return undefined;
      },
      cancel() {
        state.cancelled = true;
      },
    });
    return { response: new Response(body, { headers: HEADERS }), state };
  }

  it("reads on after [DONE] to the body's end, dropping what follows, and does not cancel it", async () => {
    const { response, state } = trackedBody([enc.encode(`data: ${chunk("a")}\n\ndata: [DONE]\n\n`), enc.encode(`data: ${chunk("late")}\n\n`)], false);
    const items: unknown[] = [];
    for await (const batch of sseItems(response, new AbortController().signal, OPENAI_SSE)) items.push(...batch);
    expect(items).toHaveLength(1);
    expect(state.cancelled).toBe(false);
  });

  it("a body held open after [DONE] is cancelled once the drain bound passes", async () => {
    const { response, state } = trackedBody([enc.encode(`data: ${chunk("a")}\n\ndata: [DONE]\n\n`)], true);
    const items: unknown[] = [];
    const started = performance.now();
    for await (const batch of sseItems(response, new AbortController().signal, OPENAI_SSE, 30)) items.push(...batch);
    expect(items).toHaveLength(1);
    expect(state.cancelled).toBe(true);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
  });

  it("a drain bound of 0 cancels right after [DONE], as the SDKs do", async () => {
    const { response, state } = trackedBody([enc.encode(`data: ${chunk("a")}\n\ndata: [DONE]\n\n`), enc.encode(`data: ${chunk("late")}\n\n`)], false);
    const items: unknown[] = [];
    for await (const batch of sseItems(response, new AbortController().signal, OPENAI_SSE, 0)) items.push(...batch);
    expect(items).toHaveLength(1);
    expect(state.cancelled).toBe(true);
  });

  it("an abort while draining after [DONE] cancels the body", async () => {
    const { response, state } = trackedBody([enc.encode(`data: ${chunk("a")}\n\ndata: [DONE]\n\n`)], true);
    const ac = new AbortController();
    const items: unknown[] = [];
    const pass = (async () => {
      for await (const batch of sseItems(response, ac.signal, OPENAI_SSE, 60_000)) items.push(...batch);
    })();
    setTimeout(() => ac.abort(), 10);
    await pass;
    expect(items).toHaveLength(1);
    expect(state.cancelled).toBe(true);
  });

  it("an abort while a read is pending ends the items silently and cancels the body", async () => {
    const { response, state } = trackedBody([enc.encode(`data: ${chunk("a")}\n\n`)], true);
    const ac = new AbortController();
    const items: unknown[] = [];
    for await (const batch of sseItems(response, ac.signal, OPENAI_SSE)) {
      items.push(...batch);
      setTimeout(() => ac.abort(), 5);
    }
    expect(items).toHaveLength(1);
    expect(state.cancelled).toBe(true);
  });

  it("a consumer that stops early cancels the body", async () => {
    const { response, state } = trackedBody([enc.encode(`data: ${chunk("a")}\n\n`), enc.encode(`data: ${chunk("b")}\n\n`)], true);
    for await (const batch of sseItems(response, new AbortController().signal, OPENAI_SSE)) if (batch.length) break;
    expect(state.cancelled).toBe(true);
  });

  it("an error event cancels the body after handing on the items before it", async () => {
    const { response, state } = trackedBody([enc.encode(`data: ${chunk("a")}\n\ndata: {"error":{"message":"x"}}\n\n`)], true);
    const items: unknown[] = [];
    await expect(
      (async () => {
        for await (const batch of sseItems(response, new AbortController().signal, OPENAI_SSE)) items.push(...batch);
      })(),
    ).rejects.toBeInstanceOf(OpenAIAPIError);
    expect(items).toHaveLength(1);
    expect(state.cancelled).toBe(true);
  });

  it("a body read to its end is not cancelled", async () => {
    const { response, state } = trackedBody([enc.encode(`data: ${chunk("a")}\n\n`)], false);
    for await (const _ of sseItems(response, new AbortController().signal, OPENAI_SSE)) void _;
    expect(state.cancelled).toBe(false);
  });
});

describe("normalizeChunk: the SDK's chat chunk normalization, in place", () => {
  it("gives what normalizeChatCompletionChunk gives", async () => {
    const { normalizeChatCompletionChunk } = await import("openai/lib/chat-completions/streaming");
    const { normalizeChunk } = await import("../openai-chat/adapter.js");
    const fixtures = [
      '{"id":"a","choices":[{"index":0,"delta":{"content":"x"}}]}',
      '{"id":"a","choices":[{"index":0,"delta":{},"finish_reason":"stop"},{"index":1,"finish_reason":null,"delta":{}}]}',
      '{"id":"a","choices":[],"usage":{"prompt_tokens":1}}',
      '{"id":"a","usage":{"prompt_tokens":1}}',
      '{"id":"a","choices":"not an array"}',
      '{"id":"a","choices":[5,"s",true]}',
      "null",
      "7",
    ];
    for (const f of fixtures) {
      expect(JSON.stringify(normalizeChunk(JSON.parse(f)))).toBe(JSON.stringify(normalizeChatCompletionChunk(JSON.parse(f))));
    }
    expect(() => normalizeChatCompletionChunk(JSON.parse('{"choices":[null]}'))).toThrow(TypeError);
    expect(() => normalizeChunk(JSON.parse('{"choices":[null]}'))).toThrow(TypeError);
  });
});
