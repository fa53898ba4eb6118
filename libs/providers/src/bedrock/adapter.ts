import { AnthropicBedrock } from "@anthropic-ai/bedrock-sdk";
import { ProviderError, type ModelCallRequest, type ProviderAdapter, type ProviderEvent } from "@byok/protocol";
import { ANTHROPIC_SDK_TRACING_OFF, parseAdapterOptions, sdkTransportOptions, type ProviderAdapterDeps } from "../shared/options.js";
import { configurationError, eachAsBatch } from "../shared/transport.js";
import { streamMessagesPass, type MessagesClient } from "../anthropic/adapter.js";

/**
 * The `anthropic_version` Bedrock requires in the body
 * (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html).
 * Set explicitly: the SDK only fills it from its own version header when absent.
 */
export const BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31";

/**
 * Anthropic models on AWS Bedrock through `@anthropic-ai/bedrock-sdk` (SigV4 with the
 * target's keys). Request mapping, stream decoding, usage and error mapping are the
 * Anthropic Messages adapter's (Bedrock streams the same events inside AWS event-stream
 * frames; the SDK unwraps them, and Bedrock exceptions arrive as typed `error` events).
 *
 * Only the target's credentials are used: the ambient AWS credential chain (env, profiles,
 * instance metadata) is disabled so a pass can never borrow the gateway host's identity.
 */
export function createBedrockAdapter(deps: ProviderAdapterDeps = {}): ProviderAdapter {
  return {
    kind: "bedrock-anthropic",
    async *stream(req: ModelCallRequest): AsyncGenerator<ProviderEvent> {
      const opts = parseAdapterOptions(req.target.options);
      const b = req.target.bedrock;
      const provider = "AWS Bedrock";
      const secrets = [b?.secretAccessKey, b?.sessionToken, b?.accessKeyId];
      if (!b) throw new ProviderError("auth", "No AWS credentials were configured for this Bedrock model");
      let client: AnthropicBedrock;
      try {
        client = new AnthropicBedrock({
          awsRegion: b.region,
          awsAccessKey: b.accessKeyId,
          awsSecretKey: b.secretAccessKey,
          awsSessionToken: b.sessionToken ?? null,
          apiKey: null,
          providerChainResolver: () => Promise.reject(new Error("ambient AWS credentials are disabled")),
          baseURL: req.target.baseUrl ?? `https://bedrock-runtime.${b.region}.amazonaws.com`,
          ...sdkTransportOptions(opts, deps, req.target),
          ...ANTHROPIC_SDK_TRACING_OFF,
        });
      } catch (err) {
        throw configurationError(provider, err, secrets);
      }
      const messages = client as unknown as MessagesClient;
      yield* streamMessagesPass(
        req,
        {
          client: messages,
          // AWS event-stream frames, not SSE: the SDK's stream reads them, one event at a time.
          streamEvents: async (body, signal) => eachAsBatch(await messages.messages.create(body, { signal })),
          provider,
          secrets,
          body: (body) => ({ ...body, anthropic_version: BEDROCK_ANTHROPIC_VERSION }) as typeof body,
        },
        opts,
      );
    },
  };
}
