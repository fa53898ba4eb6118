// Issue 6 through the embedded gateway (PGlite): tenant setup end to end via the admin API,
// API-key authentication, cross-tenant isolation on every RPC, the usage ledger per attempt,
// budgets, run-start rate limits, client credentials, ghost mode and retention.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createRunEngine, decodeSnapshot } from "@byok/agent";
import { retryPolicy } from "@byok/protocol";
import { createProviderAdapter } from "@byok/providers";
import { createLogger } from "@byok/telemetry";
import { cancelMessage, createCursorClient, heartbeatMessage, runRequestMessage, waitFor, withinOneMinuteWindow, type CursorClient } from "@byok/testing";
import type { Reservation } from "@byok/metering";
import { memoryMetering, tenancyEngineDeps } from "@byok/runtime";
import { AgentClientMessageSchema, ErrorDetailsSchema, ErrorDetails_Error } from "@byok/wire";
import { adminCall, GATEWAY_PROVIDER_KEY, startHarness, type Harness } from "./harness.js";

const ADMIN_KEY = "admin-key-for-tenancy-tests-0123456789";
const SIM_KEY = "sk-tenant-credential-abcdef0123456789";

describe("tenancy through the embedded gateway", () => {
  /** The ErrorDetails.error of a refused BidiAppend (Connect JSON error body, details decoded). */
  async function appendErrorDetail(token: string | undefined): Promise<ErrorDetails_Error | undefined> {
    const res = await fetch(`${h.gw.url}/aiserver.v1.BidiService/BidiAppend`, {
      method: "POST",
      headers: { "content-type": "application/proto", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
      body: new Uint8Array(0),
    });
    const body = (await res.json()) as { code: string; details?: { type: string; value: string }[] };
    const d = body.details?.find((x) => x.type.endsWith("ErrorDetails"));
    return d ? fromBinary(ErrorDetailsSchema, Buffer.from(d.value, "base64")).error : undefined;
  }

  let h: Harness;
  let n = 0;
  const rid = (p: string) => `${p}-${++n}`;

  const admin = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => adminCall<T>(h.gw, ADMIN_KEY, method, path, body);

  /** A tenant with a key, a sealed credential and a route to the simulator. */
  async function tenant(id: string, opts: { retention?: string; limits?: Record<string, unknown> } = {}): Promise<{ client: CursorClient; secret: string; keyId: string }> {
    expect((await admin("POST", "/v1/tenants", { tenantId: id, name: id, ...opts })).status).toBe(201);
    const key = await admin<{ key: { keyId: string }; secret: string }>("POST", `/v1/tenants/${id}/keys`, { name: `${id}-key` });
    expect(key.status).toBe(201);
    expect((await admin("PUT", `/v1/tenants/${id}/credentials/sim`, { credential: { kind: "api_key", apiKey: SIM_KEY } })).status).toBe(200);
    const route = { targets: [{ provider: "openai-chat", model: "sim-model", baseUrl: `${h.sim.url}/v1`, credentialsRef: "sim" }] };
    expect((await admin("PUT", `/v1/tenants/${id}/routes/tenant-model`, route)).status).toBe(200);
    return { client: createCursorClient({ baseUrl: h.gw.url, authToken: key.body.secret }), secret: key.body.secret, keyId: key.body.key.keyId };
  }

  beforeAll(async () => {
    h = await startHarness({ GATEWAY_AUTH_MODE: "api_key", GATEWAY_ADMIN_KEY: ADMIN_KEY, GATEWAY_NOT_FOUND_WAIT_MS: "500", GATEWAY_KV_ACK_TIMEOUT_MS: "300" });
  });
  afterAll(async () => h.close());

  it("sets a tenant up end to end: tenant → key → credential → route → price → a turn with that key → usage report", async () => {
    const acme = await tenant("acme");
    expect((await admin("POST", "/v1/prices", { provider: "openai-chat", model: "sim-model", inputPerMTok: 2_000_000, outputPerMTok: 8_000_000 })).status).toBe(201);
    h.sim.enqueue({ text: "hello from acme", usage: { inputTokens: 1000, outputTokens: 500 } });
    const requestId = rid("acme");
    const r = await acme.client.runTurn({ requestId, message: runRequestMessage({ text: "hi", conversationId: "c-acme", modelId: "tenant-model" }) });
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toBe("hello from acme");
    // The tenant's sealed credential reached the provider; the database holds no plaintext of it.
    const req = h.sim.requests.at(-1)!;
    expect(req.headers["authorization"]).toBe(`Bearer ${SIM_KEY}`);

    const rows = await h.gw.store.ledger.forRequest("acme", requestId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      tenantId: "acme", keyId: acme.keyId, conversationId: "c-acme", requestId, generation: 1, attempt: 1, provider: "openai-chat",
      upstreamModel: "sim-model", route: "tenant-model", credentialsSource: "gateway", inputTokens: 1000, outputTokens: 500,
      estimated: false, priceVersion: 1, costMicroUsd: 2000 + 4000, outcome: "ok",
    });
    const usage = await admin<{ usage: { model: string; attempts: number; inputTokens: number; outputTokens: number; costMicroUsd: number }[] }>("GET", "/v1/tenants/acme/usage");
    expect(usage.body.usage).toEqual([expect.objectContaining({ model: "sim-model", attempts: 1, inputTokens: 1000, outputTokens: 500, costMicroUsd: 6000 })]);
    const csv = await fetch(`${h.gw.adminUrl}/v1/tenants/acme/usage?format=csv`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    expect(await csv.text()).toContain("sim-model");
    // Audit rows hold ids and counts, never the credential or the key's secret.
    const audit = JSON.stringify(await h.gw.store.audit.list({ tenantId: "acme" }));
    expect(audit).not.toContain(SIM_KEY);
    expect(audit).not.toContain(acme.secret);
  });

  it("refuses missing, invalid, revoked and expired keys with unauthenticated + ERROR_BAD_API_KEY on both RPCs", async () => {
    const t = await tenant("keys");
    const revoked = await admin<{ key: { keyId: string }; secret: string }>("POST", "/v1/tenants/keys/keys", { name: "soon-revoked" });
    expect((await admin("POST", `/v1/tenants/keys/keys/${revoked.body.key.keyId}/revoke`)).status).toBe(200);
    const expired = await h.gw.store.apiKeys.create({ tenantId: "keys", name: "expired", expiresAt: new Date(Date.now() - 60_000) });
    const cases: [string | undefined, RegExp][] = [
      [undefined, /Missing gateway API key/],
      ["byok_000000000000_" + "0".repeat(64), /Invalid gateway API key/],
      [revoked.body.secret, /revoked/],
      [expired.secret, /expired/],
    ];
    for (const [token, message] of cases) {
      const c = createCursorClient({ baseUrl: h.gw.url, ...(token === undefined ? {} : { authToken: token }) });
      const requestId = rid("badkey");
      const a = await c.append(requestId, 1, runRequestMessage({ text: "hi", conversationId: "c-bad", modelId: "tenant-model" }));
      expect(a).toMatchObject({ ok: false, code: "unauthenticated" });
      if (a.ok) throw new Error("expected a refusal");
      expect(a.message).toMatch(message);
      expect(await appendErrorDetail(token)).toBe(ErrorDetails_Error.BAD_API_KEY);
      const s = await c.collect(requestId);
      if (s.httpError) expect(s.httpError.code).toBe("unauthenticated");
      else {
        expect(s.end).toMatchObject({ ok: false, code: "unauthenticated" });
        if (s.end?.ok === false) expect(s.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.BAD_API_KEY);
      }
      if (token) expect(JSON.stringify(a)).not.toContain(token);
    }
    // The tenant's good key still works.
    h.sim.enqueue({ text: "still fine", usage: { inputTokens: 1, outputTokens: 1 } });
    expect((await t.client.runTurn({ requestId: rid("goodkey"), message: runRequestMessage({ text: "hi", conversationId: "c-good", modelId: "tenant-model" }) })).end).toEqual({ ok: true });
  });

  it("refuses a key revoked through the admin API at once, though it just authenticated a turn (GATEWAY_API_KEY_CACHE_MS)", async () => {
    const t = await tenant("revoke-now");
    h.sim.enqueue({ text: "before", usage: { inputTokens: 1, outputTokens: 1 } });
    // Verified and kept by the process's key cache (5 s by default).
    expect((await t.client.runTurn({ requestId: rid("before-revoke"), message: runRequestMessage({ text: "hi", conversationId: "c-rn", modelId: "tenant-model" }) })).end).toEqual({ ok: true });
    expect((await admin("POST", `/v1/tenants/revoke-now/keys/${t.keyId}/revoke`)).status).toBe(200);
    const a = await t.client.append(rid("after-revoke"), 1, runRequestMessage({ text: "hi", conversationId: "c-rn", modelId: "tenant-model" }));
    expect(a).toMatchObject({ ok: false, code: "unauthenticated" });
    if (!a.ok) expect(a.message).toMatch(/revoked/);
  });

  it("isolates tenants on every RPC: another tenant's request is not_found on RunSSE and appends land in the caller's tenant", async () => {
    const a = await tenant("iso-a");
    const b = await tenant("iso-b");
    h.sim.enqueue({ text: ["a-1 ", "a-2"], stallAfterChunks: 2 });
    const requestId = rid("iso");
    const first = await a.client.append(requestId, 1, runRequestMessage({ text: "tenant a", conversationId: "c-iso", modelId: "tenant-model" }));
    expect(first).toEqual({ ok: true });
    await h.sim.waitForRequest(h.sim.requests.length - 1);

    // RunSSE for A's request with B's key: exactly like a request that does not exist.
    const foreign = await b.client.collect(requestId);
    expect(foreign.end).toMatchObject({ ok: false, code: "not_found" });
    const missing = await b.client.collect(rid("never-existed"));
    expect(missing.end).toMatchObject({ ok: false, code: "not_found" });
    expect(foreign.messages).toHaveLength(0);

    // BidiAppend with B's key on A's request id lands in B's tenant, never in A's run.
    const before = (await h.gw.bus.readInput({ tenantId: "iso-a", requestId }, 1, 0)).length;
    expect(await b.client.append(requestId, 2, heartbeatMessage())).toMatchObject({});
    expect((await h.gw.bus.readInput({ tenantId: "iso-a", requestId }, 1, 0)).length).toBe(before);
    // A cancels its own run; B's append never reached it and A's stream is intact.
    expect(await a.client.append(requestId, 2, cancelMessage())).toEqual({ ok: true });
    const own = await a.client.collect(requestId);
    expect(own.end).toMatchObject({ ok: false, code: "canceled" });
    // Ledger and store rows of A are not visible under B.
    expect(await h.gw.store.ledger.forRequest("iso-b", requestId)).toHaveLength(0);
    expect(await h.gw.store.listHistory("iso-b", "c-iso")).toHaveLength(0);
  });

  it("writes one ledger row per attempt: ok, retried, failed and cancelled, exact where the simulator reported usage", async () => {
    const t = await tenant("ledger");
    // retried then ok: the cut attempt is estimated, the second exact.
    h.sim.enqueue({ text: ["partial ", "answer ", "cut"], disconnectAfterChunks: 2 }, { text: "complete", usage: { inputTokens: 40, outputTokens: 7, cacheReadTokens: 3 } });
    const retried = rid("retry");
    expect((await t.client.runTurn({ requestId: retried, message: runRequestMessage({ text: "go", conversationId: "c-l1", modelId: "tenant-model" }) })).end).toEqual({ ok: true });
    const rows = await h.gw.store.ledger.forRequest("ledger", retried);
    expect(rows.map((r) => [r.attempt, r.outcome, r.estimated])).toEqual([[1, "retried", true], [2, "ok", false]]);
    expect(rows[1]).toMatchObject({ inputTokens: 40, outputTokens: 7, cacheReadTokens: 3 });
    expect(rows[0]!.outputTokens).toBeGreaterThan(0);

    // failed: a non-retryable provider error.
    h.sim.enqueue({ httpError: { status: 400, body: { error: { message: "bad request", type: "invalid_request_error" } } } });
    const failed = rid("failed");
    const f = await t.client.runTurn({ requestId: failed, message: runRequestMessage({ text: "go", conversationId: "c-l2", modelId: "tenant-model" }) });
    expect(f.end?.ok).toBe(false);
    expect((await h.gw.store.ledger.forRequest("ledger", failed)).map((r) => [r.attempt, r.outcome, r.estimated])).toEqual([[1, "failed", true]]);

    // cancelled: cancel_action mid-stream.
    h.sim.enqueue({ text: ["first ", "second"], stallAfterChunks: 2 });
    const cancelled = rid("cancelled");
    let sent = false;
    const c = await t.client.runTurn({
      requestId: cancelled,
      message: runRequestMessage({ text: "go", conversationId: "c-l3", modelId: "tenant-model" }),
      onMessage: async (m, turn) => {
        if (!sent && m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta") {
          sent = true;
          await turn.append(cancelMessage());
        }
      },
    });
    expect(c.end).toMatchObject({ ok: false, code: "canceled" });
    await waitFor(async () => (await h.gw.store.ledger.forRequest("ledger", cancelled)).length === 1);
    expect((await h.gw.store.ledger.forRequest("ledger", cancelled))[0]).toMatchObject({ outcome: "cancelled", estimated: true });

    // x-original-request-id groups a client's retries.
    h.sim.enqueue({ text: "grouped", usage: { inputTokens: 2, outputTokens: 1 } });
    const grouped = rid("grouped");
    await t.client.runTurn({ requestId: grouped, message: runRequestMessage({ text: "go", conversationId: "c-l4", modelId: "tenant-model" }), append: { originalRequestId: "orig-1" } });
    expect((await h.gw.store.ledger.forRequest("ledger", grouped))[0]).toMatchObject({ originalRequestId: "orig-1" });
  });

  it("records an interrupted row from the owner that takes over a cut attempt, and settles the dead owner's budget lease once", async () => {
    await tenant("takeover");
    const store = h.gw.store;
    const logger = createLogger({ service: "test", level: "silent" });
    const m = memoryMetering(store, h.config.timers.budgetLeaseTtlMs, h.config.limits.ledgerSpoolMaxRows);
    const deps = tenancyEngineDeps({ store, config: h.config, env: {}, ...m, logger });
    const engine = (dead: boolean) =>
      createRunEngine({
        bus: h.gw.bus, store, adapterFor: (k) => createProviderAdapter(k), resolveTargets: deps.resolveTargets,
        retryPolicy: retryPolicy({ baseDelayMs: 5 }),
        timers: { ...h.config.timers, reconnectGraceMs: 60_000, presenceCheckMs: 60_000, kvAckTimeoutMs: 50 },
        logger, content: deps.content,
        // A dead worker settles nothing.
        meter: dead ? { ...deps.meter, settleAttempt: async () => {} } : deps.meter,
      });
    h.sim.enqueue({ text: ["cut-a ", "cut-b ", "cut-c"], stallAfterChunks: 2 }, { text: "resumed", usage: { inputTokens: 9, outputTokens: 2 } });
    // Driven on the bus directly (no ingress, no in-process dispatcher): tenant "takeover".
    const ref = { tenantId: "takeover", requestId: rid("takeover") };
    const msg = create(AgentClientMessageSchema, runRequestMessage({ text: "go", conversationId: "c-take", modelId: "tenant-model" }));
    await h.gw.bus.appendInput(ref, 1n, toBinary(AgentClientMessageSchema, msg), {});
    const first = new AbortController();
    const run1 = engine(true).runGeneration(ref, 1, first.signal);
    await waitFor(async () => (await h.gw.bus.readOutput(ref, 1, 0, 100)).entries.length > 0 && h.sim.requests.length > 0);
    // The owner's reservation travels in its snapshot for the next owner to settle.
    const snapshotTicket = async () => decodeSnapshot(await h.gw.bus.loadSnapshot(ref, 1))?.meterTicket as { reservation: Reservation } | undefined;
    const cut = (await waitFor(snapshotTicket, 20_000, "the attempt's ticket in the snapshot")).reservation;
    expect(cut).toMatchObject({ tenantId: "takeover" });
    first.abort();
    await run1;
    await engine(false).runGeneration(ref, 1);
    const rows = await store.ledger.forRequest("takeover", ref.requestId);
    expect(rows.map((r) => [r.attempt, r.outcome, r.estimated])).toEqual([[1, "interrupted", true], [2, "ok", false]]);
    expect(rows[1]).toMatchObject({ inputTokens: 9, outputTokens: 2 });
    // Settled exactly once (by the new owner): settling it again changes nothing, and the
    // tenant's counter holds the two ledger rows' tokens, no leftover reservation.
    expect(await m.budgets.settle(cut!, { costMicroUsd: 0, tokens: 1_000_000 })).toBe("settled");
    const ledgerTokens = rows.reduce((n, r) => n + r.inputTokens + r.outputTokens + r.cacheReadTokens + r.cacheWriteTokens, 0);
    const probe = await m.budgets.reserve({ tenantId: "takeover", userId: undefined, limits: { tenant: { monthlyTokens: 0 } }, estimate: { costMicroUsd: 0, tokens: 1 }, chargeCost: false });
    expect(probe).toMatchObject({ ok: false, refused: { used: ledgerTokens } });
  });

  it("ends a run over budget with resource_exhausted + ERROR_RESOURCE_EXHAUSTED naming the limit", async () => {
    const t = await tenant("broke", { limits: { tenant: { monthlyCostMicroUsd: 1000 } } });
    await h.gw.store.prices.set({ provider: "openai-chat", model: "sim-model", inputPerMTok: 2_000_000, outputPerMTok: 8_000_000, cacheReadPerMTok: 0, cacheWritePerMTok: 0 });
    const before = h.sim.requests.length;
    const r = await t.client.runTurn({ requestId: rid("broke"), message: runRequestMessage({ text: "expensive", conversationId: "c-broke", modelId: "tenant-model" }) });
    expect(r.end).toMatchObject({ ok: false, code: "resource_exhausted" });
    if (r.end?.ok !== false) throw new Error("expected an error end");
    expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.RESOURCE_EXHAUSTED);
    expect(r.end.message).toMatch(/tenant.*(cost|budget)|budget.*tenant/i);
    expect(h.sim.requests.length).toBe(before); // no provider call was made

    // Client-credential runs cost the tenant nothing: they pass the cost budget and are metered.
    await admin("PUT", "/v1/tenants/broke/routes/byok-model", { targets: [{ provider: "openai-chat", model: "sim-model", baseUrl: `${h.sim.url}/v1`, credentials: "client" }] });
    h.sim.enqueue({ text: "on my own key", usage: { inputTokens: 100, outputTokens: 50 } });
    const own = rid("own-key");
    const o = await t.client.runTurn({ requestId: own, message: runRequestMessage({ text: "mine", conversationId: "c-own", modelId: "byok-model", credentials: { apiKey: "sk-client-own-key-0123456789" } }) });
    expect(o.end).toEqual({ ok: true });
    expect((await h.gw.store.ledger.forRequest("broke", own))[0]).toMatchObject({ credentialsSource: "client", costMicroUsd: 0, inputTokens: 100, outputTokens: 50 });
  });

  it("refuses an unpriced model to a tenant with a cost budget: failed_precondition naming the model, no provider call", async () => {
    const t = await tenant("budgeted", { limits: { tenant: { monthlyCostMicroUsd: 1_000_000_000 } } });
    const route = { targets: [{ provider: "openai-chat", model: "sim-unpriced", baseUrl: `${h.sim.url}/v1`, credentialsRef: "sim" }] };
    expect((await admin("PUT", "/v1/tenants/budgeted/routes/unpriced-model", route)).status).toBe(200);
    const before = h.sim.requests.length;
    const r = await t.client.runTurn({ requestId: rid("unpriced"), message: runRequestMessage({ text: "free?", conversationId: "c-unpriced", modelId: "unpriced-model" }) });
    expect(r.end).toMatchObject({ ok: false, code: "failed_precondition" });
    if (r.end?.ok !== false) throw new Error("expected an error end");
    expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.CUSTOM_MESSAGE);
    expect(r.end.message).toContain("sim-unpriced");
    expect(r.end.message).toMatch(/price set openai-chat sim-unpriced/);
    expect(h.sim.requests.length).toBe(before);

    // Without a cost budget the same model runs (and costs 0).
    const free = await tenant("no-budget");
    await admin("PUT", "/v1/tenants/no-budget/routes/unpriced-model", route);
    h.sim.enqueue({ text: "free", usage: { inputTokens: 3, outputTokens: 1 } });
    const ok = await free.client.runTurn({ requestId: rid("unpriced-free"), message: runRequestMessage({ text: "free?", conversationId: "c-unpriced-free", modelId: "unpriced-model" }) });
    expect(ok.end).toEqual({ ok: true });
  });

  it("refuses a run start over the per-key rate limit: BidiAppend acknowledged, RunSSE ends at once resource_exhausted + ERROR_RATE_LIMITED", async () => {
    const t = await tenant("busy", { limits: { perKeyRate: { runStartsPerMinute: 1 } } });
    h.sim.enqueue({ text: "first run", usage: { inputTokens: 1, outputTokens: 1 } });
    await withinOneMinuteWindow();
    const first = await t.client.runTurn({ requestId: rid("rate"), message: runRequestMessage({ text: "1", conversationId: "c-r1", modelId: "tenant-model" }) });
    expect(first.end).toEqual({ ok: true });
    const r = await t.client.runTurn({ requestId: rid("rate"), message: runRequestMessage({ text: "2", conversationId: "c-r2", modelId: "tenant-model" }) });
    expect(r.appends[0]).toEqual({ ok: true });
    expect(r.end).toMatchObject({ ok: false, code: "resource_exhausted" });
    if (r.end?.ok !== false) throw new Error("expected an error end");
    expect(r.end.errorDetails[0]?.error).toBe(ErrorDetails_Error.RATE_LIMITED);
    expect(r.end.message).toMatch(/run starts|per minute/i);
    expect(r.textDeltas).toBe("");
  });

  it("ghost mode and retention none/metadata leave no content rows; the ledger still counts the run", async () => {
    const t = await tenant("ghosts");
    const ghost = createCursorClient({ baseUrl: h.gw.url, authToken: t.secret, ghostMode: true });
    h.sim.enqueue({ text: "GHOST-ANSWER-TEXT", usage: { inputTokens: 3, outputTokens: 2 } });
    const requestId = rid("ghost");
    const r = await ghost.runTurn({ requestId, message: runRequestMessage({ text: "GHOST-PROMPT-TEXT", conversationId: "c-ghost", modelId: "tenant-model" }) });
    expect(r.end).toEqual({ ok: true });
    expect(r.textDeltas).toBe("GHOST-ANSWER-TEXT");
    expect(await h.gw.store.listHistory("ghosts", "c-ghost")).toHaveLength(0);
    expect(await h.gw.store.getConversation("ghosts", "c-ghost")).toBeUndefined();
    expect(await h.gw.store.latestCheckpoint("ghosts", "c-ghost")).toBeUndefined();
    for (const id of r.blobs.keys()) expect(await h.gw.store.getBlobs("ghosts", [Buffer.from(id, "hex")]).then(([b]) => b)).toBeUndefined();
    const rows = await h.gw.store.ledger.forRequest("ghosts", requestId);
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toMatch(/GHOST-(PROMPT|ANSWER)-TEXT/);
    expect(JSON.stringify(await h.gw.store.audit.list())).not.toMatch(/GHOST-(PROMPT|ANSWER)-TEXT/);

    // The same tenant without ghost mode stores history (retention full).
    h.sim.enqueue({ text: "kept", usage: { inputTokens: 1, outputTokens: 1 } });
    await t.client.runTurn({ requestId: rid("kept"), message: runRequestMessage({ text: "kept prompt", conversationId: "c-kept", modelId: "tenant-model" }) });
    expect((await h.gw.store.listHistory("ghosts", "c-kept")).length).toBeGreaterThan(0);

    for (const retention of ["none", "metadata"] as const) {
      const rt = await tenant(`ret-${retention}`, { retention });
      h.sim.enqueue({ text: "private", usage: { inputTokens: 1, outputTokens: 1 } });
      const conv = `c-ret-${retention}`;
      expect((await rt.client.runTurn({ requestId: rid("ret"), message: runRequestMessage({ text: "secret prompt", conversationId: conv, modelId: "tenant-model" }) })).end).toEqual({ ok: true });
      expect(await h.gw.store.listHistory(`ret-${retention}`, conv)).toHaveLength(0);
      expect(await h.gw.store.latestCheckpoint(`ret-${retention}`, conv)).toBeUndefined();
      const conversation = await h.gw.store.getConversation(`ret-${retention}`, conv);
      if (retention === "none") expect(conversation).toBeUndefined();
      else expect(conversation?.conversationId).toBe(conv);
    }
  });

  it("applies the configuration file's routes to the default tenant at start (the file wins for the routes it names)", async () => {
    const routes = await h.gw.store.routes.list(h.config.defaultTenant);
    expect(routes.map((r) => r.modelId)).toContain("test-model");
    expect(JSON.stringify(routes)).not.toContain(GATEWAY_PROVIDER_KEY);
  });
});
