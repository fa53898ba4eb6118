// Issue 11 through the embedded gateway: Cursor's own call sequence (sign-in, models, the
// aiserver.v1 control plane, then RunSSE + BidiAppend with the session token) for two tenants;
// cross-tenant, tampered, foreign-key, expired and revoked tokens; the per-tenant catalogue and
// policy; unimplemented procedures counted; bad bodies; no secret in any answer.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { decodeJwt } from "jose";
import { createTokenService } from "@byok/control-plane";
import { controlPlaneClients, createCursorClient, exchangeApiKey, listModels, metricDelta, runRequestMessage, scrapeMetrics, signInLikeCursor } from "@byok/testing";
import { aiserver, ErrorDetailsSchema, ErrorDetails_Error } from "@byok/wire";
import { adminCall, startHarness, type Harness } from "./harness.js";

const ADMIN_KEY = "admin-key-for-control-plane-tests-0123";
const SIM_KEY = "sk-tenant-credential-cp-abcdef0123456789";
const SIGNING = Buffer.alloc(32, 7);
const OLD_SIGNING = Buffer.alloc(32, 9);
const RECHECK_MS = 300;

/** Bytes an answer must never carry: provider keys, gateway keys, tokens, the provider's base URL. */
let secrets: string[] = [];
function expectNoSecret(bytes: Uint8Array | string): void {
  const text = typeof bytes === "string" ? bytes : Buffer.from(bytes).toString("latin1");
  for (const s of secrets) expect(text.includes(s), `answer carries a secret (${s.slice(0, 6)}…)`).toBe(false);
  expect(text).not.toMatch(/sk-[A-Za-z0-9]{8}/);
}
/** Every answer decodes with the generated type after a round trip and carries no secret. */
function checked<D extends DescMessage>(schema: D, m: MessageShape<D>): MessageShape<D> {
  const bytes = toBinary(schema, m);
  fromBinary(schema, bytes);
  expectNoSecret(bytes);
  return m;
}

describe("control plane through the embedded gateway", () => {
  let h: Harness;

  const admin = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => adminCall<T>(h.gw, ADMIN_KEY, method, path, body);

  async function tenant(id: string, policy: Record<string, unknown> = {}): Promise<{ secret: string; keyId: string }> {
    expect((await admin("POST", "/v1/tenants", { tenantId: id, name: id })).status).toBe(201);
    if (Object.keys(policy).length > 0) expect((await admin("PATCH", `/v1/tenants/${id}`, { policy })).status).toBe(200);
    const key = await admin<{ key: { keyId: string }; secret: string }>("POST", `/v1/tenants/${id}/keys`, { name: `${id}-laptop` });
    expect((await admin("PUT", `/v1/tenants/${id}/credentials/sim`, { credential: { kind: "api_key", apiKey: SIM_KEY } })).status).toBe(200);
    const target = { provider: "openai-chat", model: "sim-model", baseUrl: `${h.sim.url}/v1`, credentialsRef: "sim" };
    const routes: [string, Record<string, unknown>][] = [
      [`${id}-fast`, { displayName: `${id} Fast`, aliases: [`${id}-fast-latest`] }],
      [`${id}-thinker`, { displayName: `${id} Thinker`, thinking: true, maxMode: true, efforts: ["low", "medium", "high"], defaultEffort: "medium", contextTokens: 200000 }],
      [`${id}-hidden`, { hidden: true }],
    ];
    for (const [model, catalogue] of routes) {
      expect((await admin("PUT", `/v1/tenants/${id}/routes/${model}`, { targets: [target], catalogue })).status).toBe(200);
    }
    secrets.push(key.body.secret);
    return { secret: key.body.secret, keyId: key.body.key.keyId };
  }

  let acme: { secret: string; keyId: string };
  let globex: { secret: string; keyId: string };

  beforeAll(async () => {
    h = await startHarness({
      GATEWAY_AUTH_MODE: "api_key",
      GATEWAY_ADMIN_KEY: ADMIN_KEY,
      GATEWAY_NOT_FOUND_WAIT_MS: "500",
      GATEWAY_KV_ACK_TIMEOUT_MS: "300",
      // kid "new" signs; "old" still verifies (rotation).
      GATEWAY_TOKEN_KEYS: `new:${SIGNING.toString("base64")},old:${OLD_SIGNING.toString("base64")}`,
      GATEWAY_TOKEN_KEY_RECHECK_MS: String(RECHECK_MS),
      GATEWAY_ACCESS_TOKEN_TTL_S: "600",
    });
    secrets = [SIM_KEY, h.sim.url.replace(/^http:\/\//, ""), ADMIN_KEY];
    acme = await tenant("acme", { defaultModel: "acme-thinker" });
    globex = await tenant("globex", { privacyMode: "enforced" });
  }, 120_000);
  afterAll(async () => h?.close());

  it("runs Cursor's observed call sequence for two tenants: exchange, models, the Connect calls, then RunSSE + BidiAppend with the session token", async () => {
    const before = await scrapeMetrics(h.gw.url);
    for (const [id, t] of [["acme", acme], ["globex", globex]] as const) {
      const pre = await signInLikeCursor(h.gw.url, t.secret);
      // The client reads `sub` and `exp` of the access token.
      const claims = decodeJwt(pre.signIn.accessToken);
      expect(claims.sub).toBe(`${id}/key/${t.keyId}`);
      expect(claims.exp! - Math.floor(Date.now() / 1000)).toBeGreaterThan(500);
      expect(decodeJwt(pre.signIn.refreshToken).typ).toBe("refresh");
      expect(pre.signIn.authId).toBe(`byok|${id}/key/${t.keyId}`);
      secrets.push(pre.signIn.accessToken, pre.signIn.refreshToken);

      // Models: this tenant's routes only, hidden ones left out; one body for Cursor and OpenAI clients.
      expect(pre.models.items).toEqual([
        { id: `${id}-fast`, displayName: `${id} Fast` },
        { id: `${id}-thinker`, displayName: `${id} Thinker` },
      ]);
      expect(pre.models.object).toBe("list");
      expect(pre.models.data.map((m) => [m.id, m.object])).toEqual([[`${id}-fast`, "model"], [`${id}-thinker`, "model"]]);
      expectNoSecret(JSON.stringify(pre.models));

      checked(aiserver.GetUserPrivacyModeResponseSchema, pre.privacyMode);
      checked(aiserver.GetServerConfigResponseSchema, pre.serverConfig);
      expect(pre.serverConfig.http2Config).toBe(aiserver.Http2Config.FORCE_ALL_DISABLED);
      checked(aiserver.BootstrapStatsigResponseSchema, pre.statsig);
      expect(checked(aiserver.GetTeamAdminSettingsResponseSchema, pre.teamAdmin).allowedModels).toEqual([`${id}-fast`, `${id}-thinker`]);

      // The agent calls with the access token; the alias routes like the model id.
      h.sim.enqueue({ text: `hello ${id}` });
      const client = createCursorClient({ baseUrl: h.gw.url, authToken: pre.signIn.accessToken, clientType: "cli" });
      const r = await client.runTurn({ requestId: `cp-${id}-1`, message: runRequestMessage({ text: "hi", conversationId: `c-cp-${id}`, modelId: `${id}-fast-latest` }) });
      expect(r.end).toEqual({ ok: true });
      expect(r.textDeltas).toBe(`hello ${id}`);

      // During and after the run.
      checked(aiserver.TrackEventsResponseSchema, await pre.clients.analytics.trackEvents({ events: [{ eventName: "agent.turn", timestamp: 1n }] }));
      checked(aiserver.GetTeamReposResponseSchema, await pre.clients.dashboard.getTeamReposOrEmptyIfNotInTeam({}));
    }
    // Each tenant signed in once, asked for its privacy mode once and sent one analytics event.
    const d = metricDelta(before, await scrapeMetrics(h.gw.url));
    expect(d("byok_control_plane_calls_total", { procedure: "DashboardService/GetUserPrivacyMode", code: "ok" })).toBe(2);
    expect(d("byok_analytics_events_total")).toBe(2);
    expect(d("byok_session_tokens_total", { grant: "api_key", outcome: "issued" })).toBe(2);
    expect(d("byok_session_tokens_total", { outcome: "refused" })).toBe(0);
  });

  it("answers the IDE's calls from the tenant's catalogue and policy, never with a key or base URL", async () => {
    const { accessToken } = await exchangeApiKey(h.gw.url, acme.secret);
    const c = controlPlaneClients(h.gw.url, accessToken, { clientType: "ide" });

    const time = checked(aiserver.ServerTimeResponseSchema, await c.ai.serverTime({}));
    expect(Math.abs(time.transmitTimestamp - Date.now())).toBeLessThan(60_000);

    const avail = checked(aiserver.AvailableModelsResponseSchema, await c.ai.availableModels({ useModelParameters: true }));
    expect(avail.modelNames).toEqual(["acme-fast", "acme-thinker"]);
    const fast = avail.models.find((m) => m.name === "acme-fast")!;
    expect(fast.clientDisplayName).toBe("acme Fast");
    expect(fast.idAliases).toEqual(["acme-fast-latest"]);
    expect(fast.supportsThinking).toBe(false);
    const thinker = avail.models.find((m) => m.name === "acme-thinker")!;
    expect([thinker.supportsThinking, thinker.supportsMaxMode, thinker.contextTokenLimit]).toEqual([true, true, 200000]);
    expect(thinker.parameterDefinitions[0]?.id).toBe("thinking_effort");
    expect(thinker.variants.map((v) => [v.parameterValues[0]?.value, v.isDefaultNonMaxConfig])).toEqual([["low", false], ["medium", true], ["high", false]]);
    expect(avail.composerModelConfig?.defaultModel).toBe("acme-thinker");
    const withHidden = checked(aiserver.AvailableModelsResponseSchema, await c.ai.availableModels({ includeHiddenModels: true }));
    expect(withHidden.models.find((m) => m.name === "acme-hidden")?.isHidden).toBe(true);

    const usable = checked(aiserver.GetUsableModelsResponseSchema, await c.ai.getUsableModels({}));
    expect(usable.models.map((m) => m.modelName)).toEqual(["acme-fast", "acme-thinker"]);
    expect(usable.models.every((m) => m.apiKey === undefined && m.openaiApiBaseUrl === undefined)).toBe(true);
    expect(checked(aiserver.GetDefaultModelResponseSchema, await c.ai.getDefaultModel({})).model).toBe("acme-thinker");
    const cli = checked(aiserver.GetDefaultModelForCliResponseSchema, await c.ai.getDefaultModelForCli({}));
    expect([cli.model?.modelName, cli.model?.apiKey]).toEqual(["acme-thinker", undefined]);
    const nudge = checked(aiserver.GetDefaultModelNudgeDataResponseSchema, await c.ai.getDefaultModelNudgeData({}));
    expect(nudge.initialModel?.modelId).toBe("acme-thinker");
    expect(nudge.initialModel?.parameters).toEqual([expect.objectContaining({ id: "thinking_effort", value: "medium" })]);

    // Privacy mode: acme leaves it to the user; globex enforces it.
    expect((await c.dashboard.getUserPrivacyMode({ inferredPrivacyMode: aiserver.PrivacyMode.NO_TRAINING })).privacyMode).toBe(aiserver.PrivacyMode.NO_TRAINING);
    const g = controlPlaneClients(h.gw.url, (await exchangeApiKey(h.gw.url, globex.secret)).accessToken);
    const gp = checked(aiserver.GetUserPrivacyModeResponseSchema, await g.dashboard.getUserPrivacyMode({}));
    expect([gp.privacyMode, gp.isEnforcedByTeam]).toEqual([aiserver.PrivacyMode.NO_STORAGE, true]);

    // AiService/GetServerConfig (the same answer under the IDE's name), IsConnected, GetEmail.
    for (const path of ["/aiserver.v1.AiService/GetServerConfig", "/aiserver.v1.NetworkService/IsConnected", "/aiserver.v1.AuthService/GetEmail"]) {
      const res = await fetch(`${h.gw.url}${path}`, { method: "POST", headers: { "content-type": "application/proto", authorization: `Bearer ${accessToken}` }, body: new Uint8Array() });
      expect(res.status, path).toBe(200);
      const bytes = new Uint8Array(await res.arrayBuffer());
      expectNoSecret(bytes);
      if (path.includes("GetServerConfig")) expect(fromBinary(aiserver.GetServerConfigResponseSchema, bytes).http2Config).toBe(aiserver.Http2Config.FORCE_ALL_DISABLED);
    }
    const unauth = await fetch(`${h.gw.url}/aiserver.v1.NetworkService/IsConnected`, { method: "POST", headers: { "content-type": "application/proto" }, body: new Uint8Array() });
    expect(unauth.status).toBe(401);

    // /v1/traces: accepted (dropped: no collector configured) and counted.
    const tr = await fetch(`${h.gw.url}/v1/traces`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${accessToken}` }, body: '{"resourceSpans":[]}' });
    expect(tr.status).toBe(200);
    expect(await (await fetch(`${h.gw.url}/metrics`)).text()).toMatch(/byok_client_trace_exports_total\{outcome="dropped"\} 1/);
  });

  it("a tenant that enforces privacy mode keeps no content, whatever x-ghost-mode says", async () => {
    const { accessToken } = await exchangeApiKey(h.gw.url, globex.secret);
    h.sim.enqueue({ text: "not kept" });
    const client = createCursorClient({ baseUrl: h.gw.url, authToken: accessToken, ghostMode: false });
    const r = await client.runTurn({ requestId: "cp-globex-private", message: runRequestMessage({ text: "PRIVATE-PROMPT", conversationId: "c-globex-private", modelId: "globex-fast" }) });
    expect(r.end).toEqual({ ok: true });
    expect(await h.gw.store.listHistory("globex", "c-globex-private")).toHaveLength(0);
    expect(await h.gw.store.latestCheckpoint("globex", "c-globex-private")).toBeUndefined();
    // acme (policy `user`) keeps history for the same kind of run.
    const a = createCursorClient({ baseUrl: h.gw.url, authToken: (await exchangeApiKey(h.gw.url, acme.secret)).accessToken });
    h.sim.enqueue({ text: "kept" });
    expect((await a.runTurn({ requestId: "cp-acme-kept", message: runRequestMessage({ text: "hi", conversationId: "c-acme-kept", modelId: "acme-fast" }) })).end).toEqual({ ok: true });
    expect((await h.gw.store.listHistory("acme", "c-acme-kept")).length).toBeGreaterThan(0);
  });

  it("refreshes through exchange_user_api_key (refresh token as Bearer) and /oauth/token; a refresh token cannot authorize a call", async () => {
    const first = await exchangeApiKey(h.gw.url, acme.secret);
    const again = await exchangeApiKey(h.gw.url, first.refreshToken);
    expect(again.status).toBe(200);
    expect(decodeJwt(again.accessToken).sub).toBe(decodeJwt(first.accessToken).sub);
    const oauth = await fetch(`${h.gw.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ grant_type: "refresh_token", client_id: "cursor", refresh_token: first.refreshToken }),
    });
    const ob = (await oauth.json()) as { access_token: string; refresh_token: string; token_type: string; expires_in: number; shouldLogout: boolean };
    expect([oauth.status, ob.token_type, ob.expires_in, ob.shouldLogout]).toEqual([200, "Bearer", 600, false]);
    expect((await listModels(h.gw.url, ob.access_token)).status).toBe(200);
    const bad = await fetch(`${h.gw.url}/oauth/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: `grant_type=refresh_token&refresh_token=${first.accessToken}` });
    expect([bad.status, ((await bad.json()) as { error: string }).error]).toEqual([401, "invalid_grant"]);
    expect((await listModels(h.gw.url, first.refreshToken)).status).toBe(401);
  });

  /** Every agent and control-plane call with `token` is refused `unauthenticated` with `error`. */
  async function expectRefusedEverywhere(token: string, error: ErrorDetails_Error): Promise<void> {
    const client = createCursorClient({ baseUrl: h.gw.url, authToken: token });
    const append = await client.append(`refused-${Math.random()}`, 1, runRequestMessage({ text: "x", conversationId: "c-x", modelId: "acme-fast" }));
    expect(append).toMatchObject({ ok: false, status: 401, code: "unauthenticated" });
    const sse = await client.collect(`refused-sse-${Math.random()}`);
    expect(sse.end).toMatchObject({ ok: false, code: "unauthenticated" });
    expect(sse.end?.ok === false && sse.end.errorDetails[0]?.error).toBe(error);
    const c = controlPlaneClients(h.gw.url, token);
    const err = await c.ai.availableModels({}).then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(err?.code).toBe(Code.Unauthenticated);
    expect(err?.findDetails(ErrorDetailsSchema)[0]?.error).toBe(error);
    expect((await listModels(h.gw.url, token)).status).toBe(401);
  }

  it("refuses cross-tenant reuse, tampered tokens and tokens of unknown keys; the rotated-out key still verifies", async () => {
    const a = await exchangeApiKey(h.gw.url, acme.secret);
    const g = await exchangeApiKey(h.gw.url, globex.secret);
    // globex's run is invisible to acme's token: the token names its tenant, and every lookup is scoped by it.
    h.sim.enqueue({ text: "globex only" });
    const gc = createCursorClient({ baseUrl: h.gw.url, authToken: g.accessToken });
    expect((await gc.runTurn({ requestId: "cp-shared-id", message: runRequestMessage({ text: "hi", conversationId: "c-g", modelId: "globex-fast" }) })).textDeltas).toBe("globex only");
    const ac = createCursorClient({ baseUrl: h.gw.url, authToken: a.accessToken });
    expect((await ac.collect("cp-shared-id")).end).toMatchObject({ ok: false, code: "not_found" });
    // And acme's token lists acme's models only.
    expect((await listModels(h.gw.url, a.accessToken)).body.items.every((m) => m.id.startsWith("acme-"))).toBe(true);

    // Tampering with the tenant claim breaks the signature.
    const [head, payload, sig] = a.accessToken.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>;
    const forged = `${head}.${Buffer.from(JSON.stringify({ ...claims, tid: "globex" })).toString("base64url")}.${sig}`;
    await expectRefusedEverywhere(forged, ErrorDetails_Error.BAD_API_KEY);
    // Signed with a key this gateway does not have.
    const foreign = createTokenService({ keys: [{ kid: "new", secret: new Uint8Array(32).fill(1) }], issuer: "cursor-byok-gateway", accessTtlS: 600, refreshTtlS: 600 });
    await expectRefusedEverywhere((await foreign.issue({ tenantId: "acme", userId: undefined, keyId: acme.keyId })).accessToken, ErrorDetails_Error.BAD_API_KEY);
    // Signed with the old key of the ring: still verifies (rotation), for its own tenant only.
    const old = createTokenService({ keys: [{ kid: "old", secret: new Uint8Array(OLD_SIGNING) }], issuer: "cursor-byok-gateway", accessTtlS: 600, refreshTtlS: 600 });
    const oldToken = (await old.issue({ tenantId: "acme", userId: undefined, keyId: acme.keyId })).accessToken;
    expect((await listModels(h.gw.url, oldToken)).body.items.map((m) => m.id)).toEqual(["acme-fast", "acme-thinker"]);
    // A token naming acme with globex's key id: the key is looked up in acme and does not exist there.
    const mixed = (await old.issue({ tenantId: "acme", userId: undefined, keyId: globex.keyId })).accessToken;
    await expectRefusedEverywhere(mixed, ErrorDetails_Error.BAD_API_KEY);
  });

  it("refuses expired tokens with unauthenticated + ERROR_AUTH_TOKEN_EXPIRED on every call", async () => {
    const past = new Date(Date.now() - 3_600_000);
    const issuer = createTokenService({ keys: [{ kid: "new", secret: new Uint8Array(SIGNING) }], issuer: "cursor-byok-gateway", accessTtlS: 60, refreshTtlS: 300, now: () => past });
    const expired = await issuer.issue({ tenantId: "acme", userId: undefined, keyId: acme.keyId });
    await expectRefusedEverywhere(expired.accessToken, ErrorDetails_Error.AUTH_TOKEN_EXPIRED);
    expect((await exchangeApiKey(h.gw.url, expired.refreshToken)).status).toBe(401);
  });

  it(`stops a revoked key's tokens within GATEWAY_TOKEN_KEY_RECHECK_MS (${RECHECK_MS} ms here), and its refresh at once`, async () => {
    const key = await admin<{ key: { keyId: string }; secret: string }>("POST", "/v1/tenants/acme/keys", { name: "to-revoke" });
    secrets.push(key.body.secret);
    const before = await scrapeMetrics(h.gw.url);
    const s = await exchangeApiKey(h.gw.url, key.body.secret);
    expect((await listModels(h.gw.url, s.accessToken)).status).toBe(200);
    expect((await admin("POST", `/v1/tenants/acme/keys/${key.body.key.keyId}/revoke`)).status).toBe(200);
    // The refresh re-reads the key: refused at once.
    expect((await exchangeApiKey(h.gw.url, s.refreshToken)).status).toBe(401);
    const d = metricDelta(before, await scrapeMetrics(h.gw.url));
    expect(d("byok_session_tokens_total", { grant: "api_key", outcome: "issued" })).toBe(1);
    expect(d("byok_session_tokens_total", { grant: "refresh", outcome: "refused" })).toBe(1);
    // The access token: refused once the cached status is older than the recheck interval.
    await new Promise((r) => setTimeout(r, RECHECK_MS + 50));
    await expectRefusedEverywhere(s.accessToken, ErrorDetails_Error.BAD_API_KEY);
    expect((await exchangeApiKey(h.gw.url, key.body.secret)).status).toBe(401);
  });

  it("answers every other aiserver.v1 procedure unimplemented (counted per procedure), bad bodies invalid_argument with ErrorDetails", async () => {
    const { accessToken } = await exchangeApiKey(h.gw.url, acme.secret);
    const res = await fetch(`${h.gw.url}/aiserver.v1.AiService/StreamChat`, { method: "POST", headers: { "content-type": "application/proto", authorization: `Bearer ${accessToken}` }, body: new Uint8Array() });
    expect(res.status).toBe(501);
    const body = (await res.json()) as { code: string; details: { type: string; value: string }[] };
    expect(body.code).toBe("unimplemented");
    expect(fromBinary(ErrorDetailsSchema, Buffer.from(body.details[0]!.value, "base64")).details?.title).toBe("Not served by the gateway");
    expect(await (await fetch(`${h.gw.url}/metrics`)).text()).toMatch(/byok_unimplemented_procedures_total\{procedure="AiService\/StreamChat"\} 1/);
    // The poll transports are not served (docs/control-plane.md "Transports").
    const post = (path: string) => fetch(`${h.gw.url}${path}`, { method: "POST", headers: { "content-type": "application/proto", authorization: `Bearer ${accessToken}` }, body: new Uint8Array() });
    expect((await post("/aiserver.v1.BidiService/BidiPoll")).status).toBe(501);
    expect((await post("/agent.v1.AgentService/RunPoll")).status).toBe(404);

    const bad = await fetch(`${h.gw.url}/aiserver.v1.AiService/AvailableModels`, { method: "POST", headers: { "content-type": "application/proto", authorization: `Bearer ${accessToken}` }, body: new Uint8Array([0xff, 0xff, 0xff]) });
    expect(bad.status).toBe(400);
    const bb = (await bad.json()) as { code: string; details: { type: string; value: string }[] };
    expect(bb.code).toBe("invalid_argument");
    expect(fromBinary(ErrorDetailsSchema, Buffer.from(bb.details[0]!.value, "base64")).error).toBe(ErrorDetails_Error.BAD_REQUEST);
  });
});
