import OpenAI from "openai";
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParamsNonStreaming, ChatCompletionCreateParamsStreaming } from "openai/resources/chat/completions";
import type { ModelCallRequest, ProviderAdapter, ProviderEvent, ProviderKind } from "@byok/protocol";
import { ItemIds } from "../shared/ids.js";
import { parseAdapterOptions, sdkTransportOptions, type AdapterOptions, type ProviderAdapterDeps } from "../shared/options.js";
import { cancelledError, configurationError, pumpVendorStream, truncatedStreamError, type FailureContext } from "../shared/transport.js";
import { estimateUsage, inputEstimate, OutputMeter } from "../shared/usage.js";
import { ChatStreamDecoder } from "./decoder.js";
import { chatProviderName, contentFilterError, mapChatError } from "./errors.js";
import { oneResponse } from "../shared/passthrough.js";
import { openaiSseStream } from "../shared/openai-stream.js";
import { chatPassthroughBody, toChatRequest } from "./request.js";
import { normalizeChatUsage } from "./usage.js";

const OPENAI_BASE_URL = "https://api.openai.com/v1";

/**
 * Builds the SDK client for one target. Every option the SDK would otherwise read from the
 * environment (base URL, key, organization, project) is passed explicitly so a pass never
 * picks up the operator's ambient OpenAI credentials; retries are off (the engine retries).
 */
function chatClient(req: ModelCallRequest, opts: AdapterOptions, deps: ProviderAdapterDeps): OpenAI {
  return new OpenAI({
    // Keyless local endpoints still need a non-empty value for the SDK; nothing secret is sent.
    apiKey: req.target.apiKey || "no-key",
    baseURL: req.target.baseUrl ?? OPENAI_BASE_URL,
    organization: null,
    project: null,
    ...sdkTransportOptions(opts, deps, req.target),
  });
}

/** What a Chat Completions pass needs besides the request: the client and how to name the upstream. */
export interface ChatPassSetup {
  client: OpenAI;
  provider: string;
  secrets: readonly (string | undefined)[];
  /** Rewrites the body (Azure puts the deployment in the URL and ignores `model`). */
  body?: (b: ChatCompletionCreateParamsStreaming) => ChatCompletionCreateParamsStreaming;
}

/**
 * One streamed Chat Completions pass. Shared by the OpenAI-compatible and Azure adapters.
 *
 * Completion is recognised by a `finish_reason`: a stream that ends without one (the
 * connection closed cleanly mid-answer) is a retryable `network` failure, never a silent
 * success. `finish_reason: content_filter` is a `content_policy` failure. Every failure
 * after the response started carries `partialUsage` (reported, or estimated).
 */
export async function* streamChatPass(req: ModelCallRequest, setup: ChatPassSetup, opts: AdapterOptions): AsyncGenerator<ProviderEvent> {
  const meter = new OutputMeter();
  const decoder = new ChatStreamDecoder(new ItemIds(req.modelCallId, req.attempt), meter, { thinkTags: opts.thinkTags });
  const inputTokens = inputEstimate(req);
  let started = false;
  const usageSoFar = () => (decoder.rawUsage ? normalizeChatUsage(decoder.rawUsage) : estimateUsage(inputTokens(), meter, req.target.model));
  const ctx = (): FailureContext => ({
    provider: setup.provider,
    signal: req.signal,
    secrets: setup.secrets,
    partialUsage: started ? usageSoFar() : undefined,
  });

  const pt = req.passthrough;
  // A passthrough body is the caller's, in this API: the SDK sends it as it is.
  let body = pt ? (chatPassthroughBody(req, pt, opts) as unknown as ChatCompletionCreateParamsStreaming) : toChatRequest(req, opts);
  if (setup.body) body = setup.body(body);
  // Streamed: the SDK sends the request and throws its HTTP errors; the body is read by the lean SSE reader.
  const open = (): PromiseLike<AsyncIterable<readonly ChatCompletionChunk[]> | Iterable<readonly ChatCompletionChunk[]>> =>
    pt && !pt.stream
      ? oneResponse(pt, () => setup.client.chat.completions.create(body as unknown as ChatCompletionCreateParamsNonStreaming, { signal: req.signal }), (c) => [completionAsChunk(c)])
      : openaiSseStream<ChatCompletionChunk>(setup.client.chat.completions.create(body, { signal: req.signal }), req.signal, opts.drainAfterDoneMs);

  yield* pumpVendorStream({
    open,
    decode: (ev) => {
      const chunk = normalizeChunk(ev);
      if (pt?.stream) pt.onVendorEvent(chunk as unknown as Record<string, unknown>);
      return decoder.push(chunk);
    },
    mapError: (err) => mapChatError(err, ctx()),
    signal: req.signal,
    cancelled: () => cancelledError(ctx()),
    onOpen: () => {
      started = true;
    },
  });
  if (decoder.finishReason === undefined) throw truncatedStreamError(ctx());
  if (decoder.finishReason === "content_filter") throw contentFilterError(ctx());
  yield* decoder.end();
  yield {
    type: "completed", usage: usageSoFar(), endTurn: decoder.toolCallCount === 0, stopReason: decoder.stopReason(),
    ...(decoder.responseModel ? { responseModel: decoder.responseModel } : {}),
  };
}

/**
 * What the SDK's `chat.completions.create` stream does to every chunk
 * (normalizeChatCompletionChunk in node_modules/openai/lib/chat-completions/streaming.mjs): a
 * choice without `finish_reason` gets `finish_reason: null`, so passthrough callers see the
 * chunks they saw through the SDK. In place: the chunk was just parsed and is ours.
 */
export function normalizeChunk(chunk: ChatCompletionChunk): ChatCompletionChunk {
  const choices: unknown = (chunk as { choices?: unknown } | null | undefined)?.choices;
  if (!Array.isArray(choices)) return chunk;
  for (let i = 0; i < choices.length; i++) {
    const choice: unknown = choices[i];
    if (typeof choice === "object" && choice !== null) {
      const c = choice as { finish_reason?: unknown };
      if (c.finish_reason === undefined) c.finish_reason = null;
    } else {
      // Not an object (no real server sends one): the SDK's own copy, which throws for null as it does.
      const c = choice as { finish_reason?: unknown };
      choices[i] = { ...c, finish_reason: c.finish_reason ?? null };
    }
  }
  return chunk;
}

/** A non-streaming completion as the one chunk that carries all of it (its message as the delta). */
function completionAsChunk(c: ChatCompletion): ChatCompletionChunk {
  return {
    id: c.id,
    object: "chat.completion.chunk",
    created: c.created,
    model: c.model,
    usage: c.usage ?? null,
    choices: c.choices.map((ch) => ({
      index: ch.index,
      finish_reason: ch.finish_reason,
      logprobs: null,
      delta: {
        ...(ch.message as unknown as ChatCompletionChunk.Choice.Delta),
        tool_calls: (ch.message.tool_calls ?? []).flatMap((t, index) => (t.type === "function" ? [{ index, id: t.id, type: "function" as const, function: t.function }] : [])),
      },
    })),
  };
}

/** Chat Completions against OpenAI or any OpenAI-compatible endpoint (`target.baseUrl`). */
export function createOpenAIChatAdapter(deps: ProviderAdapterDeps = {}): ProviderAdapter {
  const kind: ProviderKind = "openai-chat";
  return {
    kind,
    async *stream(req: ModelCallRequest): AsyncGenerator<ProviderEvent> {
      const opts = parseAdapterOptions(req.target.options);
      const provider = chatProviderName(req.target);
      let client: OpenAI;
      try {
        client = chatClient(req, opts, deps);
      } catch (err) {
        throw configurationError(provider, err, [req.target.apiKey]);
      }
      yield* streamChatPass(req, { client, provider, secrets: [req.target.apiKey] }, opts);
    },
  };
}
