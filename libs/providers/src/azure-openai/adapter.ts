import { AzureOpenAI } from "openai";
import { ProviderError, type ModelCallRequest, type ProviderAdapter, type ProviderEvent } from "@byok/protocol";
import { parseAdapterOptions, sdkTransportOptions, type ProviderAdapterDeps } from "../shared/options.js";
import { configurationError } from "../shared/transport.js";
import { streamChatPass } from "../openai-chat/adapter.js";
import { DEFAULT_AZURE_API_VERSION } from "../routing/resolve.js";

/**
 * `endpoint` is the resource URL (`https://<resource>.openai.azure.com`); a URL that already
 * contains `/openai` is used as the SDK's base URL as is (proxies, APIM front doors).
 */
function azureUrlOption(endpoint: string): { endpoint: string } | { baseURL: string } {
  try {
    const u = new URL(endpoint);
    if (/\/openai(\/|$)/.test(u.pathname)) return { baseURL: endpoint.replace(/\/+$/, "") };
  } catch {
    // Left to the SDK, which reports it; mapped to a configuration error below.
  }
  return { endpoint };
}

/**
 * Azure OpenAI Chat Completions through the `openai` SDK's `AzureOpenAI` client: deployment in
 * the URL (`/openai/deployments/<deployment>/chat/completions`), `api-key` header,
 * `api-version` query (DEFAULT_AZURE_API_VERSION unless the route or client sets one).
 * Request mapping, decoding, usage and errors are the Chat Completions adapter's; Azure's
 * content filter (`finish_reason: content_filter`, or a 400 with code `content_filter`)
 * maps to `content_policy`.
 */
export function createAzureOpenAIAdapter(deps: ProviderAdapterDeps = {}): ProviderAdapter {
  return {
    kind: "azure-openai",
    async *stream(req: ModelCallRequest): AsyncGenerator<ProviderEvent> {
      const opts = parseAdapterOptions(req.target.options);
      const az = req.target.azure;
      const provider = "Azure OpenAI";
      const secrets = [req.target.apiKey];
      if (!az || !req.target.apiKey) throw new ProviderError("auth", "No Azure OpenAI endpoint or API key was configured for this model");
      let client: AzureOpenAI;
      try {
        client = new AzureOpenAI({
          ...azureUrlOption(az.endpoint),
          apiKey: req.target.apiKey,
          deployment: az.deployment,
          apiVersion: az.apiVersion || DEFAULT_AZURE_API_VERSION,
          ...sdkTransportOptions(opts, deps, req.target),
        });
      } catch (err) {
        throw configurationError(provider, err, secrets);
      }
      // Azure takes the model from the deployment; the body's `model` is informative only.
      const chatOpts = { ...opts, maxTokensParam: opts.maxTokensParam ?? ("max_completion_tokens" as const) };
      yield* streamChatPass({ ...req, target: { ...req.target, model: az.deployment } }, { client, provider, secrets }, chatOpts);
    },
  };
}
