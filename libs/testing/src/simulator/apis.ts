import type { ApiRenderer } from "./renderer.js";
import { openAIChatRenderer } from "./openai-chat.js";
import { openAIResponsesRenderer } from "./openai-responses.js";
import { anthropicCountTokensRenderer, anthropicMessagesRenderer } from "./anthropic-messages.js";
import { bedrockRenderer } from "./bedrock.js";

/** Every API the simulator serves, matched by path in this order. */
export const allRenderers: readonly ApiRenderer[] = [openAIChatRenderer, openAIResponsesRenderer, anthropicMessagesRenderer, anthropicCountTokensRenderer, bedrockRenderer];
