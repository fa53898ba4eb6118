// Issue 6: 200 concurrent runs against a budget that fits 10 reservations: at most 10 are
// admitted, the rest are refused clearly (resource_exhausted + ERROR_RESOURCE_EXHAUSTED).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorClient, runRequestMessage } from "@byok/testing";
import { ErrorDetails_Error } from "@byok/wire";
import { adminCall, startHarness, type Harness } from "./harness.js";

const ADMIN_KEY = "admin-key-for-budget-tests-0123456789";

describe("a budget under 200 concurrent runs", () => {
  let h: Harness;
  beforeAll(async () => {
    // 200 turns at once in one process, beside other test files on two cores: a run request may
    // take longer than the harness's 3 s not-found wait to land (seen once in the full suite:
    // a stream ended not_found); the budget is what this test is about.
    h = await startHarness({ GATEWAY_AUTH_MODE: "api_key", GATEWAY_ADMIN_KEY: ADMIN_KEY, GATEWAY_KV_ACK_TIMEOUT_MS: "2000", GATEWAY_NOT_FOUND_WAIT_MS: "30000" });
  });
  afterAll(async () => h.close());

  const admin = (method: string, path: string, body?: unknown) => adminCall(h.gw, ADMIN_KEY, method, path, body);

  it("admits at most 10 of 200 concurrent runs and refuses the others with a message naming the limit", async () => {
    // Output costs 1 µ$ a token, input nothing; a run reserves its 1000 max output tokens = 1000 µ$
    // and (the simulator reporting exactly 1000 output tokens) settles at the same cost, so the
    // 10,500 µ$ monthly budget fits 10 runs whatever their timing.
    expect((await admin("POST", "/v1/tenants", { tenantId: "crowd", name: "crowd", limits: { tenant: { monthlyCostMicroUsd: 10_500 } } })).status).toBe(201);
    const key = await admin("POST", "/v1/tenants/crowd/keys", { name: "crowd-key" });
    expect((await admin("PUT", "/v1/tenants/crowd/credentials/sim", { credential: { kind: "api_key", apiKey: "sk-crowd-credential-0123456789" } })).status).toBe(200);
    const route = { targets: [{ provider: "openai-chat", model: "crowd-model", baseUrl: `${h.sim.url}/v1`, credentialsRef: "sim", maxOutputTokens: 1000 }] };
    expect((await admin("PUT", "/v1/tenants/crowd/routes/crowd-model", route)).status).toBe(200);
    expect((await admin("POST", "/v1/prices", { provider: "openai-chat", model: "crowd-model", inputPerMTok: 0, outputPerMTok: 1_000_000 })).status).toBe(201);
    const before = h.sim.requests.length;
    h.sim.enqueue(...Array.from({ length: 10 }, () => ({ text: "admitted", usage: { inputTokens: 10, outputTokens: 1000 } })));

    const client = createCursorClient({ baseUrl: h.gw.url, authToken: String(key.body.secret) });
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        client.runTurn({ requestId: `crowd-${i}`, message: runRequestMessage({ text: `run ${i}`, conversationId: `c-crowd-${i}`, modelId: "crowd-model" }) }),
      ),
    );
    const ok = results.filter((r) => r.end?.ok === true);
    const refused = results.filter((r) => r.end?.ok === false);
    expect(ok.length).toBeLessThanOrEqual(10);
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.length + refused.length).toBe(200);
    for (const r of refused) {
      if (r.end?.ok !== false) continue;
      expect(r.end.code, r.end.message).toBe("resource_exhausted");
      expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.RESOURCE_EXHAUSTED);
      expect(r.end.message).toMatch(/budget|limit/i);
    }
    // Only admitted runs reached the provider.
    expect(h.sim.requests.length - before).toBe(ok.length);
  }, 120_000);
});
