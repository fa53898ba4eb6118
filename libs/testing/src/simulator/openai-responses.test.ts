import { afterEach, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import { startSimulator, type Simulator } from "./index.js";

let sim: Simulator;
let client: OpenAI;
beforeEach(async () => {
  sim = await startSimulator();
  client = new OpenAI({ apiKey: "sk-test", baseURL: `${sim.url}/v1`, maxRetries: 0, logLevel: "off" });
});
afterEach(() => sim.close());

async function collect(stream: AsyncIterable<ResponseStreamEvent>): Promise<ResponseStreamEvent[]> {
  const out: ResponseStreamEvent[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

describe("simulator: OpenAI Responses", () => {
  it("streams the documented event order that the official SDK parses", async () => {
    sim.enqueue({
      reasoning: "Plan it.",
      text: "Hi there",
      toolCalls: [{ id: "call_9", name: "grep", arguments: ['{"q":', '"x"}'] }],
      usage: { inputTokens: 10, outputTokens: 8, cacheReadTokens: 4, cacheWriteTokens: 2, reasoningTokens: 3 },
    });
    const events = await collect(
      await client.responses.create({ model: "gpt-sim", input: "hi", stream: true, include: ["reasoning.encrypted_content"], store: false }),
    );
    const types = events.map((e) => e.type);
    expect(types).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const reasoningDone = events[8];
    expect(reasoningDone?.type === "response.output_item.done" && reasoningDone.item.type === "reasoning" && reasoningDone.item.encrypted_content).toBeTruthy();
    const last = events.at(-1);
    expect(last?.type === "response.completed" && last.response.usage).toMatchObject({
      input_tokens: 16,
      input_tokens_details: { cached_tokens: 4, cache_write_tokens: 2 },
      output_tokens: 8,
      output_tokens_details: { reasoning_tokens: 3 },
    });
  });

  it("reports response.failed and incomplete responses", async () => {
    sim.enqueue({ text: "a b", streamError: { afterChunks: 3, code: "server_error", message: "x" } }, { text: "cut", finishReason: "max_output_tokens" });
    const failed = await collect(await client.responses.create({ model: "m", input: "hi", stream: true }));
    expect(failed.at(-1)?.type).toBe("response.failed");
    const inc = await collect(await client.responses.create({ model: "m", input: "hi", stream: true }));
    const last = inc.at(-1);
    expect(last?.type === "response.incomplete" && last.response.incomplete_details?.reason).toBe("max_output_tokens");
  });
});
