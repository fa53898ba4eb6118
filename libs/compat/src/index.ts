/**
 * @byok/compat: OpenAI-compatible (`/v1/chat/completions`, `/v1/responses`) and
 * Anthropic-compatible (`/v1/messages`, `/v1/messages/count_tokens`) endpoints over the
 * gateway's routes, usage ledger, budgets, rate limits and retries (docs/compat.md).
 */
export { createCompatHandler, COMPAT_PATHS, type CompatAuthenticator, type CompatHandler, type CompatHandlerDeps } from "./handler.js";
export type { CompatCallDeps } from "./call.js";
