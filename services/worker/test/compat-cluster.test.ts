// Issue 15 on the distributed gateway (real processes): the official `openai` and
// `@anthropic-ai/sdk` clients against two ingress replicas, which serve the compatible
// endpoints themselves over the tenant's routes in PostgreSQL, with budgets and rate limits on
// the Redis shared with the workers (a limit holds across replicas), and ledger rows in PostgreSQL.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStore, type GatewayStore } from "@byok/store";
import { withinOneMinuteWindow } from "@byok/testing";
import { DATABASE_URL, startTestCluster, TEST_MODEL, type TestCluster } from "./process-harness.js";

describe("compatible endpoints on the cluster (2 ingress replicas, real processes)", () => {
  let c: TestCluster;
  let store: GatewayStore;
  let key = "";

  beforeAll(async () => {
    c = await startTestCluster({ ingress: 2, workers: 0, tenants: [{ tenantId: "compat", retention: "full" }] });
    key = c.tenantTokens["compat"]!;
    store = await createStore({ driver: "postgres", url: DATABASE_URL, schema: c.schema });
    await store.routes.set("compat", "claude-model", [{ provider: "anthropic", model: "claude-sonnet-4-5", baseUrl: c.sim.url, apiKeyEnv: "TEST_PROVIDER_KEY" }]);
  }, 180_000);
  afterAll(async () => {
    await store?.close();
    await c?.close();
  });

  const openai = (i: number) => new OpenAI({ apiKey: key, baseURL: `${c.ingress[i]!.url}/v1`, maxRetries: 0 });
  const anthropic = (i: number) => new Anthropic({ apiKey: key, baseURL: c.ingress[i]!.url, maxRetries: 0 });

  it("serves Chat (streaming and not) and Messages (translated) through either replica, one ledger row each", async () => {
    c.sim.enqueue({ text: "from replica one", usage: { inputTokens: 11, outputTokens: 4 } });
    const chat = await openai(0).chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] });
    expect(chat.choices[0]!.message.content).toBe("from replica one");

    c.sim.enqueue({ text: "streamed", usage: { inputTokens: 7, outputTokens: 2 } });
    const stream = await openai(1).chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }], stream: true, stream_options: { include_usage: true } });
    let text = "";
    let streamId = "";
    for await (const chunk of stream) {
      streamId = chunk.id;
      text += chunk.choices[0]?.delta.content ?? "";
    }
    expect(text).toBe("streamed");

    c.sim.enqueue({ text: "a chat route answering Messages", usage: { inputTokens: 9, outputTokens: 6 } });
    const msg = await anthropic(1).messages.create({ model: TEST_MODEL, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
    expect(msg.content).toEqual([expect.objectContaining({ type: "text", text: "a chat route answering Messages" })]);
    expect(c.sim.requests.at(-1)!.api).toBe("openai-chat");

    c.sim.enqueue({ text: "claude here" });
    const claude = await anthropic(0).messages.create({ model: "claude-model", max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
    expect(c.sim.requests.at(-1)!.api).toBe("anthropic-messages");

    for (const [id, input, output] of [[chat.id, 11, 4], [streamId, 7, 2], [msg.id, 9, 6]] as const) {
      expect(await store.ledger.forRequest("compat", id)).toEqual([expect.objectContaining({ tenantId: "compat", attempt: 1, provider: "openai-chat", inputTokens: input, outputTokens: output, outcome: "ok" })]);
    }
    expect(await store.ledger.forRequest("compat", claude.id)).toEqual([expect.objectContaining({ provider: "anthropic", outcome: "ok" })]);
  });

  it("holds a tenant's run-start rate limit across replicas (counted in the shared Redis)", async () => {
    await store.tenants.create({ tenantId: "limited", name: "limited", limits: { rate: { runStartsPerMinute: 1 } } });
    await store.routes.set("limited", TEST_MODEL, [{ provider: "openai-chat", model: "sim-model", baseUrl: `${c.sim.url}/v1`, apiKeyEnv: "TEST_PROVIDER_KEY" }]);
    const limitedKey = (await store.apiKeys.create({ tenantId: "limited", name: "k" })).secret;
    const call = (i: number) =>
      new OpenAI({ apiKey: limitedKey, baseURL: `${c.ingress[i]!.url}/v1`, maxRetries: 0 }).chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    c.sim.enqueue({ text: "one" });
    await withinOneMinuteWindow();
    expect(await call(0)).toMatchObject({ object: "chat.completion" });
    // Replica 1 has admitted nothing itself: only the shared count refuses it.
    expect(await call(1)).toBeInstanceOf(OpenAI.RateLimitError);
  });

  it("answers an unknown model with each vendor's 404 and a bad key with 401", async () => {
    const o = await openai(0).chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(o).toBeInstanceOf(OpenAI.NotFoundError);
    expect(o).toMatchObject({ code: "model_not_found" });
    const a = await anthropic(1).messages.create({ model: "no-such-model", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(a).toBeInstanceOf(Anthropic.NotFoundError);
    const bad = await new OpenAI({ apiKey: "byok_000000000000_" + "0".repeat(64), baseURL: `${c.ingress[1]!.url}/v1`, maxRetries: 0 }).chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.AuthenticationError);
  });
});
