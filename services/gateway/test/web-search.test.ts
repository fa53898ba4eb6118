// Web search: off by default (the model is told it is disabled by policy); with a backend
// configured, the user approves through the interaction bridge and the backend answers.
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorClient, runRequestMessage } from "@byok/testing";
import { AgentClientMessageSchema } from "@byok/wire";
import { startHarness, TEST_MODEL, type Harness } from "./harness.js";

describe("web search", () => {
  let search: Server;
  let searchUrl: string;
  const queries: string[] = [];
  beforeAll(async () => {
    search = createServer((req, res) => {
      const q = new URL(req.url ?? "/", "http://x").searchParams.get("q") ?? "";
      queries.push(q);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ results: [{ title: "Rust parsers", url: "https://example.com/parsers", snippet: "nom and pest are popular" }] }));
    });
    search.listen(0, "127.0.0.1");
    await once(search, "listening");
    searchUrl = `http://127.0.0.1:${(search.address() as AddressInfo).port}/search`;
  });
  afterAll(() => search.close());

  const call = { toolCalls: [{ id: "w1", name: "WebSearch", arguments: JSON.stringify({ search_term: "rust parser crates" }) }], usage: { inputTokens: 1, outputTokens: 1 } };

  it("is disabled by policy without a backend: not offered, and a call gets a clear result", async () => {
    const h: Harness = await startHarness();
    try {
      h.sim.enqueue(call, { text: "I cannot search.", usage: { inputTokens: 1, outputTokens: 1 } });
      const r = await createCursorClient({ baseUrl: h.gw.url }).runTurn({
        requestId: "ws-off",
        message: runRequestMessage({ text: "find parser crates", conversationId: "c-ws-off", modelId: TEST_MODEL }),
      });
      expect(r.end).toEqual({ ok: true });
      const tools = ((h.sim.requests[0]!.body as { tools?: { function: { name: string } }[] }).tools ?? []).map((t) => t.function.name);
      expect(tools).not.toContain("WebSearch");
      expect(JSON.stringify(h.sim.requests[1]!.body)).toMatch(/disabled by policy/i);
    } finally {
      await h.close();
    }
  });

  it("asks for approval, then queries the configured backend and gives the model its results", async () => {
    const h: Harness = await startHarness({ GATEWAY_WEB_SEARCH_URL: searchUrl });
    try {
      h.sim.enqueue(call, { text: "nom and pest.", usage: { inputTokens: 1, outputTokens: 1 } });
      let approvals = 0;
      const r = await createCursorClient({ baseUrl: h.gw.url }).runTurn({
        requestId: "ws-on",
        message: runRequestMessage({ text: "find parser crates", conversationId: "c-ws-on", modelId: TEST_MODEL }),
        onMessage: async (m, t) => {
          if (m.message.case !== "interactionQuery" || m.message.value.query.case !== "webSearchRequestQuery") return;
          approvals++;
          await t.append(create(AgentClientMessageSchema, {
            message: { case: "interactionResponse", value: { id: m.message.value.id, result: { case: "webSearchRequestResponse", value: { result: { case: "approved", value: {} } } } } },
          }));
        },
      });
      expect(approvals).toBe(1);
      expect(r.end).toEqual({ ok: true });
      expect(queries).toContain("rust parser crates");
      expect(JSON.stringify(h.sim.requests[1]!.body)).toContain("nom and pest are popular");
    } finally {
      await h.close();
    }
  });
});
