import OpenAI from "openai";
import type { Response, ResponseCreateParamsNonStreaming, ResponseCreateParamsStreaming, ResponseStreamEvent } from "openai/resources/responses/responses";
import type { ModelCallRequest, ProviderAdapter, ProviderEvent } from "@byok/protocol";
import { ItemIds } from "../shared/ids.js";
import { parseAdapterOptions, sdkTransportOptions, type AdapterOptions, type ProviderAdapterDeps } from "../shared/options.js";
import { cancelledError, configurationError, pumpVendorStream, truncatedStreamError, type FailureContext } from "../shared/transport.js";
import { estimateUsage, inputEstimate, OutputMeter } from "../shared/usage.js";
import { chatProviderName } from "../openai-chat/errors.js";
import { ResponsesStreamDecoder } from "./decoder.js";
import { failedResponseError, incompleteContentFilterError, mapResponsesError } from "./errors.js";
import { oneResponse, passthroughBody } from "../shared/passthrough.js";
import { openaiSseStream } from "../shared/openai-stream.js";
import { toResponsesRequest } from "./request.js";
import { normalizeResponsesUsage } from "./usage.js";

function responsesClient(req: ModelCallRequest, opts: AdapterOptions, deps: ProviderAdapterDeps): OpenAI {
  // Everything the SDK would read from the environment is passed explicitly; retries are off.
  return new OpenAI({
    apiKey: req.target.apiKey || "no-key",
    baseURL: req.target.baseUrl ?? "https://api.openai.com/v1",
    organization: null,
    project: null,
    ...sdkTransportOptions(opts, deps, req.target),
  });
}

/**
 * One streamed Responses pass. Completion is `response.completed` (or `response.incomplete`
 * for the output cap); a stream that ends without a terminal event is a retryable `network`
 * failure; `response.failed` and `error` events are classified by their code. Failures after
 * the response started carry partial usage (reported, else estimated).
 */
export async function* streamResponsesPass(
  req: ModelCallRequest,
  client: OpenAI,
  provider: string,
  secrets: readonly (string | undefined)[],
  opts: AdapterOptions,
): AsyncGenerator<ProviderEvent> {
  const meter = new OutputMeter();
  const decoder = new ResponsesStreamDecoder(new ItemIds(req.modelCallId, req.attempt), meter);
  const inputTokens = inputEstimate(req);
  let started = false;
  const usageSoFar = () => (decoder.rawUsage ? normalizeResponsesUsage(decoder.rawUsage) : estimateUsage(inputTokens(), meter, req.target.model));
  const ctx = (): FailureContext => ({ provider, signal: req.signal, secrets, partialUsage: started ? usageSoFar() : undefined });

  const pt = req.passthrough;
  // A passthrough body is the caller's, in this API: the SDK sends it as it is.
  const body = pt ? passthroughBody(pt, req.target, opts, { fields: ["max_output_tokens"], defaultField: "max_output_tokens" }) : toResponsesRequest(req, opts);
  // Streamed: the SDK sends the request and throws its HTTP errors; the body is read by the lean SSE reader.
  const open = (): PromiseLike<AsyncIterable<readonly ResponseStreamEvent[]> | Iterable<readonly ResponseStreamEvent[]>> =>
    pt && !pt.stream
      ? oneResponse(pt, () => client.responses.create(body as unknown as ResponseCreateParamsNonStreaming, { signal: req.signal }), responseAsEvents)
      : openaiSseStream<ResponseStreamEvent>(client.responses.create(body as unknown as ResponseCreateParamsStreaming, { signal: req.signal }), req.signal, opts.drainAfterDoneMs);

  yield* pumpVendorStream({
    open,
    decode: (ev) => {
      if (pt?.stream) pt.onVendorEvent(ev as unknown as Record<string, unknown>);
      return decoder.push(ev);
    },
    mapError: (err) => mapResponsesError(err, ctx()),
    signal: req.signal,
    cancelled: () => cancelledError(ctx()),
    onOpen: () => {
      started = true;
    },
  });
  const terminal = decoder.terminal;
  if (!terminal) throw truncatedStreamError(ctx());
  if (terminal.kind === "failed") throw failedResponseError(terminal.error, ctx());
  if (terminal.kind === "incomplete" && terminal.reason === "content_filter") throw incompleteContentFilterError(ctx());
  yield {
    type: "completed", usage: usageSoFar(), endTurn: decoder.toolCallCount === 0, stopReason: decoder.stopReason(),
    ...(decoder.responseModel ? { responseModel: decoder.responseModel } : {}),
  };
}

/** A non-streaming response as the stream events that carry it: each output item done, then its terminal event. */
function responseAsEvents(r: Response): ResponseStreamEvent[] {
  const terminal = r.status === "incomplete" ? "response.incomplete" : r.status === "failed" ? "response.failed" : "response.completed";
  const events: unknown[] = r.output.map((item, output_index) => ({ type: "response.output_item.done", output_index, item, sequence_number: output_index }));
  events.push({ type: terminal, response: r, sequence_number: r.output.length });
  return events as ResponseStreamEvent[];
}

/** OpenAI Responses API (`target.baseUrl` for a compatible Responses endpoint). */
export function createOpenAIResponsesAdapter(deps: ProviderAdapterDeps = {}): ProviderAdapter {
  return {
    kind: "openai-responses",
    async *stream(req: ModelCallRequest): AsyncGenerator<ProviderEvent> {
      const opts = parseAdapterOptions(req.target.options);
      const provider = chatProviderName(req.target);
      let client: OpenAI;
      try {
        client = responsesClient(req, opts, deps);
      } catch (err) {
        throw configurationError(provider, err, [req.target.apiKey]);
      }
      yield* streamResponsesPass(req, client, provider, [req.target.apiKey], opts);
    },
  };
}
