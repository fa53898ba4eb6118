import Anthropic from "@anthropic-ai/sdk";
import type {
  Message, MessageCountTokensParams, MessageCreateParamsNonStreaming, MessageCreateParamsStreaming, RawMessageStreamEvent,
} from "@anthropic-ai/sdk/resources/messages";
import type { ModelCallRequest, ProviderAdapter, ProviderEvent, ProviderTarget, TokenCountRequest } from "@byok/protocol";
import { ItemIds } from "../shared/ids.js";
import { ANTHROPIC_SDK_TRACING_OFF, parseAdapterOptions, sdkTransportOptions, type AdapterOptions, type ProviderAdapterDeps } from "../shared/options.js";
import { cancelledError, configurationError, pumpVendorStream, truncatedStreamError, type FailureContext } from "../shared/transport.js";
import { estimateUsage, inputEstimate, OutputMeter } from "../shared/usage.js";
import { AnthropicStreamDecoder } from "./decoder.js";
import { mapAnthropicError, refusalError } from "./errors.js";
import { oneResponse, passthroughBody } from "../shared/passthrough.js";
import { toAnthropicRequest } from "./request.js";
import { anthropicSseStream } from "./stream.js";

/** The part of both SDK clients (Anthropic, AnthropicBedrock) a pass uses. */
export interface MessagesClient {
  messages: {
    create(body: MessageCreateParamsStreaming, options?: { signal?: AbortSignal }): PromiseLike<AsyncIterable<RawMessageStreamEvent>>;
    create(body: MessageCreateParamsNonStreaming, options?: { signal?: AbortSignal }): PromiseLike<Message>;
  };
}

export interface AnthropicPassSetup {
  client: MessagesClient;
  /**
   * Opens the streamed call: the events in batches for the pump. Anthropic reads the SSE body
   * with the lean reader (anthropicSseStream); Bedrock's AWS event stream stays the SDK's.
   */
  streamEvents: (body: MessageCreateParamsStreaming, signal: AbortSignal) => PromiseLike<AsyncIterable<readonly RawMessageStreamEvent[]>>;
  provider: string;
  secrets: readonly (string | undefined)[];
  /** Rewrites the body (Bedrock adds its anthropic_version). */
  body?: (b: MessageCreateParamsStreaming) => MessageCreateParamsStreaming;
}

/**
 * One streamed Messages pass, shared by the Anthropic and Bedrock adapters. Completion is
 * `message_stop`; a stream that ends before it is a retryable `network` failure;
 * `stop_reason: "refusal"` is `content_policy`. Failures after the response started carry
 * the usage Anthropic reported so far (message_start gives input and cache tokens at once),
 * or an estimate when none arrived.
 */
export async function* streamMessagesPass(req: ModelCallRequest, setup: AnthropicPassSetup, opts: AdapterOptions): AsyncGenerator<ProviderEvent> {
  const meter = new OutputMeter();
  const decoder = new AnthropicStreamDecoder(new ItemIds(req.modelCallId, req.attempt), meter);
  const inputTokens = inputEstimate(req);
  let started = false;
  const usageSoFar = () => {
    if (!decoder.usage.seen) return estimateUsage(inputTokens(), meter, req.target.model);
    const u = decoder.usage.normalized();
    // Output counted so far is only final at message_delta; before that, estimate it.
    return decoder.stopReasonRaw === undefined ? { ...u, outputTokens: Math.max(u.outputTokens, estimateUsage(0, meter, req.target.model).outputTokens), estimated: true } : u;
  };
  const ctx = (): FailureContext => ({ provider: setup.provider, signal: req.signal, secrets: setup.secrets, partialUsage: started ? usageSoFar() : undefined });

  const pt = req.passthrough;
  // A passthrough body is the caller's, in this API: the SDK sends it as it is.
  let body = pt ? (passthroughBody(pt, req.target, opts, { fields: ["max_tokens"], defaultField: "max_tokens" }) as unknown as MessageCreateParamsStreaming) : toAnthropicRequest(req, opts);
  if (setup.body) body = setup.body(body);
  const open = (): PromiseLike<AsyncIterable<readonly RawMessageStreamEvent[]> | Iterable<readonly RawMessageStreamEvent[]>> =>
    pt && !pt.stream
      ? oneResponse(pt, () => setup.client.messages.create(body as unknown as MessageCreateParamsNonStreaming, { signal: req.signal }), messageAsEvents)
      : setup.streamEvents(body, req.signal);
  yield* pumpVendorStream({
    open,
    decode: (ev) => {
      if (pt?.stream) pt.onVendorEvent(ev as unknown as Record<string, unknown>);
      return decoder.push(ev);
    },
    mapError: (err) => mapAnthropicError(err, ctx()),
    signal: req.signal,
    cancelled: () => cancelledError(ctx()),
    onOpen: () => {
      started = true;
    },
  });
  if (!decoder.stopped) throw truncatedStreamError(ctx());
  if (decoder.stopReasonRaw === "refusal") throw refusalError(ctx());
  yield {
    type: "completed", usage: usageSoFar(), endTurn: decoder.toolCallCount === 0, stopReason: decoder.stopReason(),
    ...(decoder.responseModel ? { responseModel: decoder.responseModel } : {}),
  };
}

/** A non-streaming message as the stream events that carry it: start, each block, the stop reason and usage, stop. */
function messageAsEvents(m: Message): RawMessageStreamEvent[] {
  const events: unknown[] = [{ type: "message_start", message: { ...m, content: [], stop_reason: null, stop_sequence: null } }];
  m.content.forEach((block, index) => events.push({ type: "content_block_start", index, content_block: block }, { type: "content_block_stop", index }));
  events.push({ type: "message_delta", delta: { stop_reason: m.stop_reason, stop_sequence: m.stop_sequence }, usage: m.usage }, { type: "message_stop" });
  return events as RawMessageStreamEvent[];
}

function anthropicClient(target: ProviderTarget, opts: AdapterOptions, deps: ProviderAdapterDeps): Anthropic {
  // Key and base URL passed explicitly: the SDK would otherwise read ANTHROPIC_* from the environment.
  return new Anthropic({
    apiKey: target.apiKey ?? "no-key",
    baseURL: target.baseUrl ?? "https://api.anthropic.com",
    ...sdkTransportOptions(opts, deps, target),
    ...ANTHROPIC_SDK_TRACING_OFF,
  });
}

export function anthropicProviderName(baseUrl: string | undefined): string {
  if (!baseUrl) return "Anthropic";
  try {
    const host = new URL(baseUrl).hostname;
    return host === "api.anthropic.com" ? "Anthropic" : `the Anthropic-compatible endpoint at ${host}`;
  } catch {
    return "the Anthropic-compatible endpoint";
  }
}

/** Anthropic Messages API (`target.baseUrl` for a compatible endpoint or proxy). */
export function createAnthropicAdapter(deps: ProviderAdapterDeps = {}): ProviderAdapter {
  return {
    kind: "anthropic",
    async *stream(req: ModelCallRequest): AsyncGenerator<ProviderEvent> {
      const opts = parseAdapterOptions(req.target.options);
      const provider = anthropicProviderName(req.target.baseUrl);
      let client: Anthropic;
      try {
        client = anthropicClient(req.target, opts, deps);
      } catch (err) {
        throw configurationError(provider, err, [req.target.apiKey]);
      }
      const messages = client.messages;
      yield* streamMessagesPass(
        req,
        {
          client: client as unknown as MessagesClient,
          // The SDK sends the request and throws its HTTP errors; the SSE body is read by the lean reader.
          streamEvents: (body, signal) => anthropicSseStream<RawMessageStreamEvent>(messages.create(body, { signal }), signal),
          provider,
          secrets: [req.target.apiKey],
        },
        opts,
      );
    },
    /** Anthropic's token counting API (`POST /v1/messages/count_tokens`), free and not metered. */
    async countTokens(req: TokenCountRequest): Promise<number> {
      const opts = parseAdapterOptions(req.target.options);
      const ctx: FailureContext = { provider: anthropicProviderName(req.target.baseUrl), signal: req.signal, secrets: [req.target.apiKey] };
      let client: Anthropic;
      try {
        client = anthropicClient(req.target, opts, deps);
      } catch (err) {
        throw configurationError(ctx.provider, err, ctx.secrets);
      }
      const body = { ...req.body, model: req.target.model } as unknown as MessageCountTokensParams;
      try {
        return (await client.messages.countTokens(body, { signal: req.signal })).input_tokens;
      } catch (err) {
        throw mapAnthropicError(err, ctx);
      }
    },
  };
}
