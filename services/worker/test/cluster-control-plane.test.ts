// Issue 11 on the 2 + 2 cluster (real ingress and worker processes, Redis, Postgres): Cursor's
// call sequence for two tenants with tokens signed by one replica and used on the other;
// RunSSE + BidiAppend and AgentService/Run over h2c; a Run that reconnects to the other replica
// resumes the same request; cross-tenant reads refused; no token in any process's log.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { createCursorClient, exchangeApiKey, runOverHttp2, runRequestMessage, signInLikeCursor } from "@byok/testing";
import { aiserver } from "@byok/wire";
import { jobOwner } from "./frames.js";
import { startTestCluster, TEST_MODEL, waitFor, type ServiceProcess, type TestCluster } from "./process-harness.js";

const TOKEN_KEYS = `k1:${Buffer.alloc(32, 5).toString("base64")}`;

describe("control plane and AgentService/Run on the 2 + 2 cluster", () => {
  let c: TestCluster;
  const issued: string[] = [];
  beforeAll(async () => {
    c = await startTestCluster({
      tenants: [{ tenantId: "acme", retention: "full" }, { tenantId: "globex", retention: "full" }],
      env: { GATEWAY_TOKEN_KEYS: TOKEN_KEYS, GATEWAY_HEARTBEAT_MS: "500" },
    });
  }, 180_000);
  afterAll(async () => c?.close());

  it("signs in on one ingress and works on the other, for two tenants: models, the Connect calls, RunSSE + BidiAppend, Run over h2c", async () => {
    const [a, b] = c.ingress as [TestCluster["ingress"][0], TestCluster["ingress"][0]];
    for (const tenant of ["acme", "globex"]) {
      const pre = await signInLikeCursor(a.url, c.tenantTokens[tenant]!);
      issued.push(pre.signIn.accessToken, pre.signIn.refreshToken);
      expect(pre.models.items).toEqual([{ id: TEST_MODEL, displayName: TEST_MODEL }]);
      expect(pre.serverConfig.http2Config).toBe(aiserver.Http2Config.FORCE_ALL_DISABLED);
      expect(pre.teamAdmin.allowedModels).toEqual([TEST_MODEL]);

      c.sim.enqueue({ text: `sse ${tenant}` });
      const client = createCursorClient({ baseUrl: b.url, authToken: pre.signIn.accessToken, clientType: "cli" });
      const r = await client.runTurn({ requestId: `cl-sse-${tenant}`, message: runRequestMessage({ text: "hi", conversationId: `c-cl-${tenant}`, modelId: TEST_MODEL }) });
      expect(r.end).toEqual({ ok: true });
      expect(r.textDeltas).toBe(`sse ${tenant}`);
      await pre.clients.analytics.trackEvents({ events: [{ eventName: "turn", timestamp: 1n }] });
      await pre.clients.dashboard.getTeamReposOrEmptyIfNotInTeam({});

      c.sim.enqueue({ text: `run ${tenant}` });
      const run = await runOverHttp2({ baseUrl: b.url, token: pre.signIn.accessToken, requestId: `cl-run-${tenant}`, message: runRequestMessage({ text: "hi", conversationId: `c-cl-run-${tenant}`, modelId: TEST_MODEL }) });
      expect(run.error).toBeUndefined();
      expect(run.textDeltas).toBe(`run ${tenant}`);
    }
  });

  it("a Run cut on one ingress resumes on the other; another tenant's token cannot read it", async () => {
    const [a, b] = c.ingress as [TestCluster["ingress"][0], TestCluster["ingress"][0]];
    const acme = (await exchangeApiKey(a.url, c.tenantTokens.acme!)).accessToken;
    const globex = (await exchangeApiKey(b.url, c.tenantTokens.globex!)).accessToken;
    issued.push(acme, globex);
    c.sim.enqueue({ text: "resumed elsewhere", firstByteDelayMs: 2500 });
    const message = runRequestMessage({ text: "hi", conversationId: "c-cl-resume", modelId: TEST_MODEL });
    const gone = new AbortController();
    const first = await runOverHttp2({
      baseUrl: a.url, token: acme, requestId: "cl-resume", message, signal: gone.signal,
      onMessage: (m) => {
        if (m.message.case === "interactionUpdate" && m.message.value.message.case === "heartbeat") gone.abort();
      },
    });
    expect(first.error?.code).toBe(Code.Canceled);
    const again = await runOverHttp2({ baseUrl: b.url, token: acme, requestId: "cl-resume", message });
    expect(again.error).toBeUndefined();
    expect(again.textDeltas).toBe("resumed elsewhere");
    // globex's token names globex: acme's request does not exist there.
    const other = await createCursorClient({ baseUrl: a.url, authToken: globex }).collect("cl-resume");
    expect(other.end).toMatchObject({ ok: false, code: "not_found" });
  });

  it("kill -9 of the worker behind a Run: the other worker finishes the turn on the same Run stream", async () => {
    const token = (await exchangeApiKey(c.ingress[0]!.url, c.tenantTokens.acme!)).accessToken;
    issued.push(token);
    c.sim.enqueue(
      { text: Array.from({ length: 30 }, (_, i) => `first-${i} `), chunkDelayMs: 100 },
      { text: ["second ", "attempt"] },
    );
    let killed: ServiceProcess | undefined;
    const requestId = "cl-run-kill9";
    const r = await runOverHttp2({
      baseUrl: c.ingress[1]!.url, token, requestId,
      message: runRequestMessage({ text: "count slowly", conversationId: "c-cl-kill9", modelId: TEST_MODEL }),
      onMessage: async (m) => {
        if (killed || !(m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta")) return;
        const name = await waitFor(() => jobOwner(c.redis, c.queuePrefix, { tenantId: "acme", requestId }, 1), 10_000, "job owner");
        killed = c.workers.find((w) => w.name === name);
        killed?.signal("SIGKILL");
        await killed?.exited;
      },
    });
    expect(killed).toBeDefined();
    expect(r.error).toBeUndefined();
    expect(r.textDeltas).toMatch(/^first-0 .*second attempt$/s);
    expect(r.messages.some((m) => m.message.case === "interactionUpdate" && m.message.value.message.case === "turnEnded")).toBe(true);
    c.workers = [...c.workers.filter((w) => w !== killed), await c.spawn("worker")];
  });

  it("never writes a token into any process's log", () => {
    expect(issued.length).toBeGreaterThan(0);
    for (const p of [...c.ingress, ...c.workers]) {
      const log = p.lines.join("\n");
      for (const t of issued) expect(log.includes(t), `${p.kind} logged a token`).toBe(false);
      expect(log).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\.eyJ/);
    }
  });
});
