import type { ProviderTarget } from "@byok/protocol";
import { isRecord } from "./usage.js";
import { DEFAULT_DRAIN_AFTER_END_MS } from "./sse.js";

/**
 * Adapter knobs a route can set in `ProviderTarget.options` (unknown keys are ignored;
 * wrong types fall back to the defaults, so a bad route cannot crash a pass).
 */
export interface AdapterOptions {
  /** Provider parameters merged into the request body last (e.g. `temperature`, `top_p`, vendor extensions). */
  extraBody: Record<string, unknown>;
  /** Extra HTTP headers sent upstream (e.g. `anthropic-beta`). */
  headers: Record<string, string>;
  /** Per-request timeout until the response starts, ms (default 10 min, the SDKs' own default). */
  timeoutMs: number | undefined;
  /**
   * OpenAI APIs: how long the body is read on after `[DONE]` for its end, so the connection
   * stays reusable (shared/sse.ts); 0 cancels at once, as the SDK does. Default 100 ms.
   */
  drainAfterDoneMs: number;
  /** Send the reasoning effort at all (endpoints that reject unknown parameters set this false). Default true. */
  sendReasoningEffort: boolean;
  /** Chat Completions: split `<think>…</think>` in content into reasoning. Default true. */
  thinkTags: boolean;
  /**
   * Chat Completions: how earlier reasoning goes back on assistant messages. `none` (default:
   * DeepSeek R1 rejects it), or the field an endpoint requires (Kimi / DeepSeek thinking-mode tool loops).
   */
  replayReasoning: "none" | "reasoning_content" | "reasoning";
  /** Chat Completions: name of the output cap parameter. Default `max_completion_tokens` on OpenAI's host, else `max_tokens`. */
  maxTokensParam: "max_tokens" | "max_completion_tokens" | undefined;
  /**
   * Responses: whether the model reasons (sends `reasoning`, asks for summaries and encrypted
   * reasoning). Default: guessed from the model id (o-series, gpt-5*, codex*).
   */
  reasoningModel: boolean | undefined;
  /** Responses: reasoning summary detail requested (`auto` default; `none` asks for none). */
  reasoningSummary: "auto" | "concise" | "detailed" | "none";
  /** Anthropic: thinking budget per effort level override, tokens. */
  thinkingBudgetTokens: number | undefined;
  /** Anthropic: add prompt-caching breakpoints (system, tools, last user turn). Default true. */
  promptCaching: boolean;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function bool(v: unknown, dflt: boolean): boolean {
  return typeof v === "boolean" ? v : dflt;
}

function posInt(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) && v > 0 ? v : undefined;
}

export function parseAdapterOptions(raw: Record<string, unknown> | undefined): AdapterOptions {
  const o = raw ?? {};
  const headers: Record<string, string> = {};
  if (isRecord(o["headers"])) {
    for (const [k, v] of Object.entries(o["headers"])) if (typeof v === "string") headers[k] = v;
  }
  const replay = str(o["replayReasoning"]);
  const maxParam = str(o["maxTokensParam"]);
  return {
    extraBody: isRecord(o["extraBody"]) ? o["extraBody"] : {},
    headers,
    timeoutMs: posInt(o["timeoutMs"]),
    drainAfterDoneMs: typeof o["drainAfterDoneMs"] === "number" && Number.isInteger(o["drainAfterDoneMs"]) && o["drainAfterDoneMs"] >= 0 ? o["drainAfterDoneMs"] : DEFAULT_DRAIN_AFTER_END_MS,
    sendReasoningEffort: bool(o["sendReasoningEffort"], true),
    thinkTags: bool(o["thinkTags"], true),
    replayReasoning: replay === "reasoning_content" || replay === "reasoning" ? replay : "none",
    maxTokensParam: maxParam === "max_tokens" || maxParam === "max_completion_tokens" ? maxParam : undefined,
    reasoningModel: typeof o["reasoningModel"] === "boolean" ? o["reasoningModel"] : undefined,
    reasoningSummary: ((v) => (v === "concise" || v === "detailed" || v === "none" ? v : "auto"))(str(o["reasoningSummary"])),
    thinkingBudgetTokens: posInt(o["thinkingBudgetTokens"]),
    promptCaching: bool(o["promptCaching"], true),
  };
}

/** What every adapter is built with. */
export interface ProviderAdapterDeps {
  /** fetch the SDKs use (proxies, tests); the platform fetch when absent. */
  fetch?: typeof fetch;
  /**
   * fetch for targets whose URL a client sent (`ProviderTarget.clientSentUrl`): checks the
   * resolved address of every connection (createAddressGuardedFetch). Absent where private
   * base URLs are allowed (embedded mode).
   */
  clientUrlFetch?: typeof fetch;
}

/**
 * The client options every official SDK gets: its own retries off (the engine retries), its
 * logging off (it could print keys), the route's timeout and headers, and the fetch for the
 * target (the address-guarded one when a client sent its URL).
 */
export function sdkTransportOptions(opts: AdapterOptions, deps: ProviderAdapterDeps, target: Pick<ProviderTarget, "clientSentUrl">) {
  const fetch = target.clientSentUrl && deps.clientUrlFetch ? deps.clientUrlFetch : deps.fetch;
  return {
    maxRetries: 0,
    logLevel: "off" as const,
    ...(opts.timeoutMs ? { timeout: opts.timeoutMs } : {}),
    ...(Object.keys(opts.headers).length ? { defaultHeaders: opts.headers } : {}),
    ...(fetch ? { fetch } : {}),
  };
}

/**
 * The Anthropic SDKs (Anthropic, Bedrock) trace their own API calls once a tracer provider is
 * registered: a second CLIENT span beside the engine's `chat {model}` span, a `traceparent`
 * sent to the vendor, and, with ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content in the
 * environment, prompts and completions in spans whatever the tenant's privacy mode. The engine's
 * span is the one provider-call span (docs/observability.md), so the SDK's tracing is off, and an
 * explicit option means the SDK reads none of its ANTHROPIC_OPEN_TELEMETRY_* variables.
 */
export const ANTHROPIC_SDK_TRACING_OFF = { openTelemetry: false } as const;
