// HTTP/2 AgentService/Run (issue 11 §4) on the embedded gateway: h2c and h2 over TLS (ALPN)
// on the same port as HTTP/1.1, with a session token; heartbeats; a reconnect resumes the same
// request; the control-plane calls over HTTP/2 too.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { connect } from "node:http2";
import { request } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { controlPlaneClients, createCursorClient, exchangeApiKey, runOverHttp2, runRequestMessage } from "@byok/testing";
import { aiserver, encodeEnvelope, parseEndStream } from "@byok/wire";
import { adminCall, startHarness, type Harness } from "./harness.js";

const ADMIN_KEY = "admin-key-for-run-h2-tests-0123456789";
const SIM_KEY = "sk-tenant-credential-h2-abcdef0123456789";

async function tenantKey(h: Harness, id: string): Promise<string> {
  const admin = (method: string, path: string, body?: unknown) => adminCall<{ secret: string }>(h.gw, ADMIN_KEY, method, path, body);
  expect((await admin("POST", "/v1/tenants", { tenantId: id, name: id })).status).toBe(201);
  expect((await admin("PUT", `/v1/tenants/${id}/credentials/sim`, { credential: { kind: "api_key", apiKey: SIM_KEY } })).status).toBe(200);
  const targets = [{ provider: "openai-chat", model: "sim-model", baseUrl: `${h.sim.url}/v1`, credentialsRef: "sim" }];
  expect((await admin("PUT", `/v1/tenants/${id}/routes/${id}-model`, { targets, catalogue: { displayName: `${id} model` } })).status).toBe(200);
  return (await admin("POST", `/v1/tenants/${id}/keys`, { name: "k" })).body.secret;
}

const ENV = { GATEWAY_AUTH_MODE: "api_key", GATEWAY_ADMIN_KEY: ADMIN_KEY, GATEWAY_HEARTBEAT_MS: "300", GATEWAY_KV_ACK_TIMEOUT_MS: "300", GATEWAY_NOT_FOUND_WAIT_MS: "1000" };

describe("AgentService/Run over h2c, next to HTTP/1.1 on the same port", () => {
  let h: Harness;
  let tokens: Record<string, string>;
  // A stand-in OTLP collector: what the gateway forwards client traces to.
  let collector: Server;
  const exported: { body: string; type: string | undefined }[] = [];
  beforeAll(async () => {
    collector = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        exported.push({ body, type: req.headers["content-type"] });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((r) => collector.listen(0, "127.0.0.1", r));
    h = await startHarness({
      ...ENV,
      GATEWAY_AGENT_TRANSPORT: "http2",
      GATEWAY_AGENT_URL: "https://agent.gateway.example.test",
      GATEWAY_TRACES_FORWARD_URL: `http://127.0.0.1:${(collector.address() as AddressInfo).port}/v1/traces`,
    });
    tokens = {};
    for (const id of ["acme", "globex"]) tokens[id] = (await exchangeApiKey(h.gw.url, await tenantKey(h, id))).accessToken;
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    collector?.close();
  });

  it("runs a turn per tenant over Run (h2c) with the session token, and RunSSE + BidiAppend still over HTTP/1.1", async () => {
    for (const id of ["acme", "globex"]) {
      h.sim.enqueue({ text: `h2 hello ${id}` });
      const r = await runOverHttp2({ baseUrl: h.gw.url, token: tokens[id], requestId: `h2c-${id}`, message: runRequestMessage({ text: "hi", conversationId: `c-h2c-${id}`, modelId: `${id}-model` }) });
      expect(r.error).toBeUndefined();
      expect(r.textDeltas).toBe(`h2 hello ${id}`);
      expect(r.messages.some((m) => m.message.case === "interactionUpdate" && m.message.value.message.case === "turnEnded")).toBe(true);
      h.sim.enqueue({ text: `h1 hello ${id}` });
      const c = createCursorClient({ baseUrl: h.gw.url, authToken: tokens[id] });
      expect((await c.runTurn({ requestId: `h1-${id}`, message: runRequestMessage({ text: "hi", conversationId: `c-h1-${id}`, modelId: `${id}-model` }) })).textDeltas).toBe(`h1 hello ${id}`);
    }
    // The control-plane calls over HTTP/2 as well.
    const cp = controlPlaneClients(h.gw.url, tokens.acme!, { httpVersion: "2" });
    expect((await cp.ai.availableModels({})).modelNames).toEqual(["acme-model"]);
    // GATEWAY_AGENT_TRANSPORT=http2 and GATEWAY_AGENT_URL reach the client.
    const sc = await cp.serverConfig.getServerConfig({});
    expect(sc.http2Config).toBe(aiserver.Http2Config.FORCE_ALL_ENABLED);
    expect(sc.agentUrlConfig).toMatchObject({ agentUrl: "https://agent.gateway.example.test", agentnUrl: "https://agent.gateway.example.test" });
  });

  it("forwards client /v1/traces exports to GATEWAY_TRACES_FORWARD_URL", async () => {
    const body = JSON.stringify({ resourceSpans: [{ scopeSpans: [] }] });
    const res = await fetch(`${h.gw.url}/v1/traces`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${tokens.acme}` }, body });
    expect(res.status).toBe(200);
    const deadline = Date.now() + 10_000;
    while (exported.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(exported).toEqual([{ body, type: "application/json" }]);
    expect(await (await fetch(`${h.gw.url}/metrics`)).text()).toMatch(/byok_client_trace_exports_total\{outcome="forwarded"\} 1/);
    expect((await fetch(`${h.gw.url}/v1/traces`, { method: "POST", body })).status).toBe(401);
  });

  it("sends heartbeats while the model is silent, and a Run that reconnects resumes the same request", async () => {
    h.sim.enqueue({ text: "slow answer", firstByteDelayMs: 1200 });
    const asked = h.sim.requests.length;
    const first = new AbortController();
    const message = runRequestMessage({ text: "hi", conversationId: "c-h2-resume", modelId: "acme-model" });
    // The first connection goes away after a heartbeat (the client's network dropped).
    const cut = await runOverHttp2({
      baseUrl: h.gw.url, token: tokens.acme, requestId: "h2-resume", message, signal: first.signal,
      onMessage: (m) => {
        if (m.message.case === "interactionUpdate" && m.message.value.message.case === "heartbeat") first.abort();
      },
    });
    expect(cut.heartbeats).toBeGreaterThanOrEqual(1);
    expect(cut.error?.code).toBe(Code.Canceled);
    // The reconnect sends the run_request again (a duplicate of the live run) and gets the whole turn.
    const again = await runOverHttp2({ baseUrl: h.gw.url, token: tokens.acme, requestId: "h2-resume", message });
    expect(again.error).toBeUndefined();
    expect(again.textDeltas).toBe("slow answer");
    expect(again.heartbeats).toBeGreaterThanOrEqual(1);
    // One run: the simulator was asked once.
    expect(h.sim.requests.length - asked).toBe(1);
  });

  it("refuses bad tokens and bad messages on Run with Connect errors, and Run over HTTP/1.1 with 505", async () => {
    const bad = await runOverHttp2({ baseUrl: h.gw.url, token: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", requestId: "h2-bad", message: runRequestMessage({ text: "x", conversationId: "c", modelId: "acme-model" }) });
    expect(bad.error?.code).toBe(Code.Unauthenticated);
    const h1 = await fetch(`${h.gw.url}/agent.v1.AgentService/Run`, {
      method: "POST",
      headers: { "content-type": "application/connect+proto", authorization: `Bearer ${tokens.acme}` },
      body: new Uint8Array(),
    });
    expect(h1.status).toBe(505);
    expect(((await h1.json()) as { code: string }).code).toBe("invalid_argument");
    // The caller is authenticated first: without credentials the answer is `unauthenticated`, whatever else is wrong.
    const anonymous = await fetch(`${h.gw.url}/agent.v1.AgentService/Run`, { method: "POST", headers: { "content-type": "application/connect+proto" }, body: new Uint8Array() });
    expect(anonymous.status).toBe(200);
    const end = parseEndStream(new Uint8Array(await anonymous.arrayBuffer()).subarray(5));
    expect(end).toMatchObject({ ok: false, code: "unauthenticated" });
  });

  it("authenticates before reading the body on every route: a bad body is `unauthenticated` from an unknown caller, `invalid_argument` from a tenant", async () => {
    const garbage = new Uint8Array([0xff, 0xff, 0xff, 0x0f]);
    const badEnvelope = encodeEnvelope(0, garbage);
    const unary = async (path: string, auth: Record<string, string>) => {
      const r = await fetch(`${h.gw.url}${path}`, { method: "POST", headers: { "content-type": "application/proto", "connect-protocol-version": "1", ...auth }, body: garbage });
      return { status: r.status, code: ((await r.json()) as { code: string }).code };
    };
    const runSse = async (auth: Record<string, string>) => {
      const r = await fetch(`${h.gw.url}/agent.v1.AgentService/RunSSE`, { method: "POST", headers: { "content-type": "application/connect+proto", ...auth }, body: badEnvelope });
      return { status: r.status, end: parseEndStream(new Uint8Array(await r.arrayBuffer()).subarray(5)) };
    };
    const run = (auth: Record<string, string>) =>
      new Promise<{ status: number; end: ReturnType<typeof parseEndStream> }>((resolve, reject) => {
        const session = connect(h.gw.url);
        session.on("error", reject);
        const req = session.request({ ":method": "POST", ":path": "/agent.v1.AgentService/Run", "content-type": "application/connect+proto", ...auth });
        let status = 0;
        const chunks: Buffer[] = [];
        req.on("response", (hd) => (status = Number(hd[":status"])));
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          session.close();
          resolve({ status, end: parseEndStream(Buffer.concat(chunks).subarray(5)) });
        });
        req.on("error", reject);
        req.end(badEnvelope);
      });
    const anonymous = {};
    const acme = { authorization: `Bearer ${tokens.acme}` };
    for (const path of ["/aiserver.v1.BidiService/BidiAppend", "/aiserver.v1.AiService/ServerTime"]) {
      expect(await unary(path, anonymous), path).toEqual({ status: 401, code: "unauthenticated" });
      expect(await unary(path, acme), path).toEqual({ status: 400, code: "invalid_argument" });
    }
    expect(await runSse(anonymous)).toMatchObject({ status: 200, end: { ok: false, code: "unauthenticated" } });
    expect(await runSse(acme)).toMatchObject({ status: 200, end: { ok: false, code: "invalid_argument" } });
    expect(await run(anonymous)).toMatchObject({ status: 200, end: { ok: false, code: "unauthenticated" } });
    expect(await run(acme)).toMatchObject({ status: 200, end: { ok: false, code: "invalid_argument" } });
  });
});

describe("open mode (embedded default): sign-in with any key, then Run", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ GATEWAY_HEARTBEAT_MS: "300" });
  }, 120_000);
  afterAll(async () => h?.close());

  it("issues tokens of the default tenant for any Bearer and serves Run with them", async () => {
    const s = await exchangeApiKey(h.gw.url, "whatever-the-ide-sends");
    expect(s.status).toBe(200);
    h.sim.enqueue({ text: "open mode" });
    const r = await runOverHttp2({ baseUrl: h.gw.url, token: s.accessToken, requestId: "open-1", message: runRequestMessage({ text: "hi", conversationId: "c-open", modelId: "test-model" }) });
    expect([r.error, r.textDeltas]).toEqual([undefined, "open mode"]);
  });
});

describe("AgentService/Run over h2 with TLS (ALPN), HTTP/1.1 over TLS on the same port", () => {
  let h: Harness;
  let dir: string;
  let ca: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "byok-tls-"));
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "ignore" });
    ca = readFileSync(join(dir, "cert.pem"), "utf8");
    h = await startHarness({ ...ENV, GATEWAY_TLS_CERT_FILE: join(dir, "cert.pem"), GATEWAY_TLS_KEY_FILE: join(dir, "key.pem") });
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves Run over h2 and sign-in over HTTP/1.1, both over TLS", async () => {
    expect(h.gw.url).toMatch(/^https:/);
    // Set up through the store: the admin API is on the same TLS port.
    const store = h.gw.store;
    await store.tenants.create({ tenantId: "tls", name: "tls" });
    await store.credentials.put("tls", "sim", { kind: "api_key", apiKey: SIM_KEY });
    await store.routes.set("tls", "tls-model", [{ provider: "openai-chat", model: "sim-model", baseUrl: `${h.sim.url}/v1`, credentialsRef: "sim" }]);
    const key = (await store.apiKeys.create({ tenantId: "tls", name: "k" })).secret;
    // HTTP/1.1 over TLS (node:https offers http/1.1 only): sign-in.
    const body = await new Promise<string>((resolve, reject) => {
      const q = request(`${h.gw.url}/auth/exchange_user_api_key`, { method: "POST", ca, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } }, (res) => {
        let d = "";
        res.on("data", (c: Buffer) => (d += c.toString()));
        res.on("end", () => resolve(d));
      });
      q.on("error", reject);
      q.end("{}");
    });
    const { accessToken } = JSON.parse(body) as { accessToken: string };
    h.sim.enqueue({ text: "over tls" });
    const r = await runOverHttp2({ baseUrl: h.gw.url, ca, token: accessToken, requestId: "tls-1", message: runRequestMessage({ text: "hi", conversationId: "c-tls", modelId: "tls-model" }) });
    expect(r.error).toBeUndefined();
    expect(r.textDeltas).toBe("over tls");
  });
});
