// Every request builder goes through answeredItems: no provider request can carry a tool call
// without its result, whatever history holds. Checked against the simulator, which refuses
// such requests with each vendor's own 400.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "@byok/testing";
import type { ChatItem, ProviderAdapter, ProviderTarget } from "@byok/protocol";
import { makeRequest, runPass } from "../test-support/helpers.js";
import { answeredItems, NO_RESULT_TEXT } from "./answered.js";
import { createOpenAIChatAdapter } from "../openai-chat/adapter.js";
import { createOpenAIResponsesAdapter } from "../openai-responses/adapter.js";
import { createAnthropicAdapter } from "../anthropic/adapter.js";
import { createAzureOpenAIAdapter } from "../azure-openai/adapter.js";
import { createBedrockAdapter } from "../bedrock/adapter.js";
import { DEFAULT_AZURE_API_VERSION } from "../routing.js";

const call = (id: string, name = "Read") => ({ id, name, argumentsJson: JSON.stringify({ path: "a.ts" }) });

/** History shapes that vendors refuse when sent as they are. */
const FIXTURES: Record<string, ChatItem[]> = {
  "a call left pending by a cancel, then the next turn": [
    { role: "user", text: "read a.ts" },
    { role: "assistant", text: "Reading.", toolCalls: [call("c1")] },
    { role: "user", text: "never mind, say hi" },
  ],
  "a call with no result at the end": [
    { role: "user", text: "read a.ts" },
    { role: "assistant", toolCalls: [call("c1")] },
  ],
  "one of two calls answered": [
    { role: "user", text: "read both" },
    { role: "assistant", toolCalls: [call("c1"), call("c2", "Grep")] },
    { role: "tool", toolCallId: "c2", name: "Grep", output: "match" },
    { role: "user", text: "go on" },
  ],
  "a result separated from its call by a user message": [
    { role: "user", text: "read a.ts" },
    { role: "assistant", toolCalls: [call("c1")] },
    { role: "user", text: "injected context" },
    { role: "tool", toolCallId: "c1", name: "Read", output: "export const a = 1;" },
  ],
  "a result whose call is not in history": [
    { role: "user", text: "hello" },
    { role: "tool", toolCallId: "gone", name: "Read", output: "orphan" },
    { role: "user", text: "again" },
  ],
};

describe("answeredItems", () => {
  it("answers a pending call right after its turn, keeps real results with their call, drops orphans", () => {
    expect(answeredItems(FIXTURES["a call left pending by a cancel, then the next turn"]!)).toEqual([
      { role: "user", text: "read a.ts" },
      { role: "assistant", text: "Reading.", toolCalls: [call("c1")] },
      { role: "tool", toolCallId: "c1", name: "Read", output: NO_RESULT_TEXT, isError: true },
      { role: "user", text: "never mind, say hi" },
    ]);
    expect(answeredItems(FIXTURES["a result separated from its call by a user message"]!).map((i) => i.role)).toEqual(["user", "assistant", "tool", "user"]);
    expect(answeredItems(FIXTURES["a result separated from its call by a user message"]!)[2]).toMatchObject({ toolCallId: "c1", output: "export const a = 1;" });
    expect(answeredItems(FIXTURES["a result whose call is not in history"]!).map((i) => i.role)).toEqual(["user", "user"]);
    const two = answeredItems(FIXTURES["one of two calls answered"]!);
    expect(two.slice(2, 4)).toEqual([
      { role: "tool", toolCallId: "c1", name: "Read", output: NO_RESULT_TEXT, isError: true },
      { role: "tool", toolCallId: "c2", name: "Grep", output: "match" },
    ]);
  });

  it("leaves a well-formed conversation as it is", () => {
    const ok: ChatItem[] = [
      { role: "user", text: "read" },
      { role: "assistant", toolCalls: [call("c1")] },
      { role: "tool", toolCallId: "c1", name: "Read", output: "x" },
      { role: "assistant", text: "done" },
    ];
    expect(answeredItems(ok)).toEqual(ok);
  });
});

describe("every provider request is one the vendor accepts", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ defaultScript: { text: "ok" } });
  });
  afterAll(() => sim.close());

  const adapters: [string, ProviderAdapter, (url: string) => ProviderTarget][] = [
    ["openai-chat", createOpenAIChatAdapter(), (url) => ({ kind: "openai-chat", model: "gpt-4o", baseUrl: `${url}/v1`, apiKey: "k", credentialsSource: "gateway" })],
    ["openai-responses", createOpenAIResponsesAdapter(), (url) => ({ kind: "openai-responses", model: "gpt-5", baseUrl: `${url}/v1`, apiKey: "k", credentialsSource: "gateway" })],
    ["anthropic", createAnthropicAdapter(), (url) => ({ kind: "anthropic", model: "claude-sonnet-4-5", baseUrl: url, apiKey: "k", credentialsSource: "gateway" })],
    [
      "azure-openai",
      createAzureOpenAIAdapter(),
      (url) => ({ kind: "azure-openai", model: "d1", apiKey: "k", azure: { endpoint: url, deployment: "d1", apiVersion: DEFAULT_AZURE_API_VERSION }, credentialsSource: "gateway" }),
    ],
    [
      "bedrock-anthropic",
      createBedrockAdapter(),
      (url) => ({ kind: "bedrock-anthropic", model: "us.anthropic.claude-sonnet-4-5-v1:0", baseUrl: url, bedrock: { region: "us-west-2", accessKeyId: "AKIA0", secretAccessKey: "s" }, credentialsSource: "gateway" }),
    ],
  ];

  for (const [kind, adapter, targetOf] of adapters) {
    it.each(Object.keys(FIXTURES))(`${kind}: %s`, async (name) => {
      const before = sim.requests.length;
      const { error } = await runPass(adapter, makeRequest(targetOf(sim.url), { items: FIXTURES[name]! }));
      expect(sim.requests[before]?.rejectedWith).toBeUndefined();
      expect(error).toBeUndefined();
    });
  }
});
