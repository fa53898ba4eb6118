import { afterEach, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { startSimulator, type SimScript, type Simulator } from "@byok/testing";
import type { ModelCallRequest, ProviderAdapter, ProviderError, ProviderTarget } from "@byok/protocol";
import { makeRequest, runPass, textOf } from "../test-support/helpers.js";
import { createOpenAIChatAdapter } from "../openai-chat/adapter.js";
import { createOpenAIResponsesAdapter } from "../openai-responses/adapter.js";
import { createAnthropicAdapter } from "../anthropic/adapter.js";
import { chatProviderName } from "../openai-chat/errors.js";
import { mapOpenAIError } from "./openai-errors.js";
import { mapAnthropicError } from "../anthropic/errors.js";

/**
 * The adapters that read SSE bodies with the lean reader (shared/sse.ts) against the same
 * streams read by the SDKs' own Stream: the same vendor events (passthrough), the same
 * ProviderError for an error inside the stream, malformed JSON, a cut stream and a cancel.
 */

const KEY = "sk-sse-secret-0123456789";
const TEXT = "one two three four five six seven eight nine ten";
/** A frame index past every API's preamble (Responses sends four events before the first delta). */
const MID = 7;
let sim: Simulator;

beforeEach(async () => {
  sim = await startSimulator();
});
afterEach(() => sim.close());

interface Api {
  name: string;
  adapter: ProviderAdapter;
  target: () => ProviderTarget;
  /** The same request through the SDK's own stream: the vendor events, or the SDK's error mapped as the adapter maps it. */
  sdkPath: (signal: AbortSignal) => Promise<{ events: unknown[]; error: ProviderError | undefined }>;
}

async function drain(stream: AsyncIterable<unknown>, map: (err: unknown) => ProviderError) {
  const events: unknown[] = [];
  try {
    for await (const ev of stream) events.push(ev);
    return { events, error: undefined };
  } catch (err) {
    return { events, error: map(err) };
  }
}

/** The `openai` SDK's own client and error mapping for a target: the path the adapters took before the lean reader. */
function openaiSdk(target: ProviderTarget, signal: AbortSignal) {
  const client = new OpenAI({ apiKey: KEY, baseURL: `${sim.url}/v1`, maxRetries: 0, logLevel: "off", organization: null, project: null });
  return { client, map: (err: unknown) => mapOpenAIError(err, { provider: chatProviderName(target), signal, secrets: [KEY] }) };
}

const APIS: Api[] = [
  {
    name: "openai-chat",
    adapter: createOpenAIChatAdapter(),
    target: () => ({ kind: "openai-chat", model: "deepseek-sim", baseUrl: `${sim.url}/v1`, apiKey: KEY, credentialsSource: "client" }),
    sdkPath: async (signal) => {
      const { client, map } = openaiSdk(APIS[0]!.target(), signal);
      return drain(await client.chat.completions.create({ model: "deepseek-sim", messages: [{ role: "user", content: "hi" }], stream: true, stream_options: { include_usage: true } }, { signal }), map);
    },
  },
  {
    name: "openai-responses",
    adapter: createOpenAIResponsesAdapter(),
    target: () => ({ kind: "openai-responses", model: "gpt-sim", baseUrl: `${sim.url}/v1`, apiKey: KEY, credentialsSource: "client" }),
    sdkPath: async (signal) => {
      const { client, map } = openaiSdk(APIS[1]!.target(), signal);
      return drain(await client.responses.create({ model: "gpt-sim", input: "hi", stream: true }, { signal }), map);
    },
  },
  {
    name: "anthropic",
    adapter: createAnthropicAdapter(),
    target: () => ({ kind: "anthropic", model: "claude-sim", baseUrl: sim.url, apiKey: KEY, credentialsSource: "client", maxOutputTokens: 1000 }),
    sdkPath: async (signal) => {
      const client = new Anthropic({ apiKey: KEY, baseURL: sim.url, maxRetries: 0, logLevel: "off" });
      const map = (err: unknown) => mapAnthropicError(err, { provider: "the Anthropic-compatible endpoint at 127.0.0.1", signal, secrets: [KEY] });
      const stream = await client.messages.create({ model: "claude-sim", max_tokens: 100, messages: [{ role: "user", content: "hi" }], stream: true }, { signal });
      return drain(stream, map);
    },
  },
];

/** Runs `script` through the adapter, then through the SDK's own stream. */
async function bothPaths(api: Api, script: SimScript, req: Partial<ModelCallRequest> = {}) {
  sim.enqueue(script, script);
  const lean = await runPass(api.adapter, makeRequest(api.target(), req));
  const sdk = await api.sdkPath(new AbortController().signal);
  return { lean, sdk };
}

function surface(err: ProviderError | undefined) {
  return err && { kind: err.kind, message: err.message, status: err.status, retryable: err.retryable, retryAfterMs: err.retryAfterMs };
}

for (const api of APIS) {
  describe(`${api.name}: lean SSE reader`, () => {
    it("hands the passthrough caller the events the SDK's Stream yields", async () => {
      const script: SimScript = { reasoning: "Think.", text: "Hello there, friend.", toolCalls: [{ id: "call_1", name: "grep", arguments: ['{"q"', ':"x"}'] }] };
      sim.enqueue(script, script);
      const seen: Record<string, unknown>[] = [];
      const body = api.name === "anthropic" ? { max_tokens: 100, messages: [{ role: "user", content: "hi" }] } : api.name === "openai-chat" ? { messages: [{ role: "user", content: "hi" }] } : { input: "hi" };
      const { error } = await runPass(api.adapter, makeRequest(api.target(), { passthrough: { body, stream: true, onVendorEvent: (ev) => seen.push(ev) } }));
      expect(error).toBeUndefined();
      const sdk = await api.sdkPath(new AbortController().signal);
      expect(sdk.error).toBeUndefined();
      expect(seen.length).toBeGreaterThan(5);
      // Ids, timestamps and the like differ per request; the shapes and field order must not.
      const shape = (evs: unknown[]) => JSON.stringify(evs).replace(/"(id|created|created_at|item_id|call_id|model|signature|encrypted_content)":("[^"]*"|\d+)/g, '"$1":_');
      expect(shape(seen)).toBe(shape(sdk.events));
    });

    it("an error inside the stream → the ProviderError the SDK path produces, after the events before it", async () => {
      const { lean, sdk } = await bothPaths(api, { text: TEXT, streamError: { afterChunks: MID, code: "server_error", message: "upstream died" } });
      expect(lean.error).toBeDefined();
      if (api.name !== "openai-responses") {
        // Responses reports this as `response.failed`, which the decoder (not the SDK) classifies.
        expect(sdk.error).toBeDefined();
        expect(surface(lean.error)).toEqual(surface(sdk.error));
      }
      expect(lean.error?.kind).toBe("server");
      expect(lean.error?.partialUsage).toBeDefined();
      expect(textOf(lean.events, "text_delta").length).toBeGreaterThan(0);
      expect(JSON.stringify(lean.error)).not.toContain(KEY);
    });

    it("a rate-limit error event keeps its classification", async () => {
      const { lean, sdk } = await bothPaths(api, { text: "partial", streamError: { afterChunks: 1, code: api.name === "anthropic" ? "rate_limit_error" : "rate_limit_exceeded", message: "slow down" } });
      expect(lean.error?.kind).toBe("rate_limited");
      if (api.name !== "openai-responses") expect(surface(lean.error)).toEqual(surface(sdk.error));
    });

    it("malformed JSON mid-stream → malformed_stream with partial usage, as through the SDK", async () => {
      const { lean, sdk } = await bothPaths(api, { text: TEXT, malformedAt: MID });
      expect(lean.error?.kind).toBe("malformed_stream");
      expect(surface(lean.error)).toEqual(surface(sdk.error));
      expect(lean.error?.partialUsage).toBeDefined();
      expect(lean.error?.partialUsage?.outputTokens).toBeGreaterThan(0);
      expect(textOf(lean.events, "text_delta").length).toBeGreaterThan(0);
    });

    it("a stream cut cleanly before its end → network (truncated) with partial usage", async () => {
      sim.enqueue({ text: TEXT, endAfterChunks: MID });
      const { events, error } = await runPass(api.adapter, makeRequest(api.target()));
      expect(error?.kind).toBe("network");
      expect(error?.message).toContain("the stream ended before the response was complete");
      expect(error?.partialUsage?.estimated).toBe(true);
      expect(textOf(events, "text_delta").length).toBeGreaterThan(0);
    });

    it("a disconnect mid-stream → network", async () => {
      sim.enqueue({ text: TEXT, disconnectAfterChunks: MID });
      const { error } = await runPass(api.adapter, makeRequest(api.target()));
      expect(error?.kind).toBe("network");
    });

    it("abort mid-stream → cancelled, and the simulator sees the connection closed", async () => {
      sim.enqueue({ text: TEXT, stallAfterChunks: MID });
      const ac = new AbortController();
      const { events, error } = await runPass(api.adapter, makeRequest(api.target(), { signal: ac.signal }), (e) => {
        if (e.type === "text_delta" && e.text.includes("two")) ac.abort();
      });
      expect(error?.kind).toBe("cancelled");
      expect(error?.partialUsage).toBeDefined();
      expect(textOf(events, "text_delta")).toBe("one two ");
      await sim.waitFor((r) => r[0]?.clientDisconnected === true);
      expect(sim.requests[0]?.outcome).toBe("client_disconnected");
    });

    it("a consumer that stops iterating closes the connection", async () => {
      sim.enqueue({ text: TEXT, stallAfterChunks: MID });
      for await (const e of api.adapter.stream(makeRequest(api.target()))) if (e.type === "text_delta") break;
      await sim.waitFor((r) => r[0]?.clientDisconnected === true);
    });

    it("a streamed pass of many events completes", async () => {
      const words = Array.from({ length: 500 }, (_, i) => `w${i} `);
      sim.enqueue({ text: words });
      const { events, error } = await runPass(api.adapter, makeRequest(api.target()));
      expect(error).toBeUndefined();
      expect(textOf(events, "text_delta")).toBe(words.join(""));
      expect(events.at(-1)?.type).toBe("completed");
    });
  });
}
