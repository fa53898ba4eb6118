// Secrets scan with real processes: after turns with the gateway-held provider key, a client's
// own (BYOK) key, a provider refusing the key, and wrong gateway API keys, no secret appears —
// raw, base64 (any alignment), base64url, hex or URL-encoded — in any log line of any process,
// any span attribute or event, the /metrics text, any Postgres row of the cluster's schema, or
// any Redis value under the cluster's prefixes (except where it must be: see REDIS_EXEMPT).
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Redis } from "ioredis";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorClient, runRequestMessage } from "@byok/testing";
import { DATABASE_URL, startTestCluster, TEST_MODEL, waitFor, type TestCluster } from "./process-harness.js";

const CLIENT_KEY = "sk-byok-client-secret-5f3a9c7e21d04b68";
const BOGUS_GATEWAY_KEY = "byok_bogus_0f1e2d3c4b5a69788796a5b4c3d2e1f0";

/** Every way a secret could be written down: raw, base64 at each alignment, base64url, hex, URL-encoded. */
export function encodings(secret: string): string[] {
  const raw = Buffer.from(secret, "utf8");
  const out = new Set<string>([secret, encodeURIComponent(secret), raw.toString("hex"), raw.toString("hex").toUpperCase()]);
  for (let shift = 0; shift < 3; shift++) {
    for (const enc of ["base64", "base64url"] as const) {
      const b = Buffer.concat([Buffer.alloc(shift), raw]).toString(enc).replace(/=+$/, "");
      // Drop the characters that mix in the neighbours' bits.
      out.add(b.slice(shift === 0 ? 0 : 4, b.length - 3));
    }
  }
  return [...out].filter((n) => n.length >= 16);
}

interface Haystack {
  where: string;
  text: Buffer;
}

async function redisValues(redis: Redis, pattern: string): Promise<Haystack[]> {
  const out: Haystack[] = [];
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      let parts: Buffer[] = [];
      if (type === "string") parts = [(await redis.getBuffer(key)) ?? Buffer.alloc(0)];
      else if (type === "hash") parts = Object.entries(await redis.hgetallBuffer(key)).flatMap(([k, v]) => [Buffer.from(k), v]);
      else if (type === "list") parts = await redis.lrangeBuffer(key, 0, -1);
      else if (type === "set") parts = await redis.smembersBuffer(key);
      else if (type === "zset") parts = await redis.zrangeBuffer(key, "0", "-1");
      else if (type === "stream") parts = (await redis.xrangeBuffer(key, "-", "+")).flatMap(([, f]) => f);
      out.push({ where: `redis ${type} ${key}`, text: Buffer.concat([Buffer.from(key), ...parts]) });
    }
  } while (cursor !== "0");
  return out;
}

async function postgresRows(schema: string): Promise<Haystack[]> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    const tables = await client.query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = $1", [schema]);
    const out: Haystack[] = [];
    for (const { table_name } of tables.rows) {
      const rows = await client.query<{ j: string }>(`SELECT row_to_json(t)::text AS j FROM "${schema}"."${table_name}" t`);
      for (const r of rows.rows) out.push({ where: `postgres ${table_name}`, text: Buffer.from(r.j) });
    }
    return out;
  } finally {
    await client.end();
  }
}

describe("secrets scan (real processes)", () => {
  let c: TestCluster;
  const traceFile = join(mkdtempSync(join(tmpdir(), "byok-secrets-")), "spans.jsonl");
  beforeAll(async () => {
    c = await startTestCluster({ ingress: 1, workers: 1, env: { GATEWAY_TRACE_FILE: traceFile, GATEWAY_LOG_LEVEL: "debug" } });
  });
  afterAll(async () => {
    await c?.close();
  });

  it("finds no provider or gateway key anywhere after the scenarios", async () => {
    const ingress = c.ingress[0]!;
    const worker = c.workers[0]!;
    const client = createCursorClient({ baseUrl: ingress.url, authToken: c.authToken });
    const turn = (id: string, init: Parameters<typeof runRequestMessage>[0]) => client.runTurn({ requestId: `${id}-${randomUUID()}`, message: runRequestMessage(init) });

    // 1. The gateway's own provider key (route), streaming text.
    c.sim.enqueue({ text: "gateway key turn" });
    expect((await turn("gw", { text: "hi", conversationId: `c-${randomUUID()}`, modelId: TEST_MODEL })).end).toEqual({ ok: true });
    // 2. The client's own key (BYOK) at its base URL, a success then a refusal of that key.
    c.sim.enqueue({ text: "byok turn" }, { httpError: { status: 401 } });
    const byok = { apiKey: CLIENT_KEY, baseUrl: `${c.sim.url}/v1` };
    expect((await turn("byok", { text: "hi", conversationId: `c-${randomUUID()}`, modelId: "llama-byok", credentials: byok })).end).toEqual({ ok: true });
    const refused = await turn("byok-401", { text: "hi", conversationId: `c-${randomUUID()}`, modelId: "llama-byok", credentials: byok });
    expect(refused.end).toMatchObject({ ok: false });
    // 3. The gateway key refused by the provider (the error message must not echo it).
    c.sim.enqueue({ httpError: { status: 401 } });
    expect((await turn("gw-401", { text: "hi", conversationId: `c-${randomUUID()}`, modelId: TEST_MODEL })).end).toMatchObject({ ok: false });
    // 4. Wrong gateway API keys on both RPCs.
    const bogus = createCursorClient({ baseUrl: ingress.url, authToken: BOGUS_GATEWAY_KEY });
    expect((await bogus.append(`bogus-${randomUUID()}`, 1, runRequestMessage({ text: "x", conversationId: "c", modelId: TEST_MODEL }))).ok).toBe(false);
    expect((await bogus.collect(`bogus-${randomUUID()}`)).end).toMatchObject({ ok: false, code: "unauthenticated" });
    // The provider really got both keys (so a miss below is not a scenario that never ran).
    expect(c.sim.findSecret(c.env.TEST_PROVIDER_KEY!).length).toBeGreaterThan(0);
    expect(c.sim.findSecret(CLIENT_KEY).length).toBeGreaterThan(0);

    // Let every process flush its spans.
    await waitFor(() => readFileSync(traceFile, "utf8").includes('"service":"worker"'), 10_000, "worker spans in the trace file");
    await new Promise((r) => setTimeout(r, 500));
    const metrics = await Promise.all([ingress.url, worker.url].map(async (u) => ({ where: `metrics ${u}`, text: Buffer.from(await (await fetch(`${u}/metrics`)).text()) })));
    const haystacks: Haystack[] = [
      ...[ingress, worker].flatMap((p) => p.lines.map((l, i) => ({ where: `${p.kind} log line ${i}`, text: Buffer.from(l) }))),
      ...readFileSync(traceFile, "utf8").trim().split("\n").map((l, i) => ({ where: `span ${i}`, text: Buffer.from(l) })),
      ...metrics,
      ...(await postgresRows(c.schema)),
    ];
    const redis = [...(await redisValues(c.redis, `${c.keyPrefix}:*`)), ...(await redisValues(c.redis, `${c.queuePrefix}:*`))];
    const secrets = { provider: c.env.TEST_PROVIDER_KEY!, gateway: c.authToken, bogusGateway: BOGUS_GATEWAY_KEY, client: CLIENT_KEY };
    const hits: string[] = [];
    let checks = 0;
    for (const [name, secret] of Object.entries(secrets)) {
      for (const needle of encodings(secret)) {
        const bytes = Buffer.from(needle);
        for (const h of haystacks) {
          checks++;
          if (h.text.includes(bytes)) hits.push(`${name} (${needle.slice(0, 8)}…) in ${h.where}`);
        }
        // The client's own key travels inside its run_request, which the generation's input
        // stream (`…:g<N>:in`) keeps for the worker and a takeover until the request expires
        // (GATEWAY_FINISHED_RETENTION_MS); every other Redis value must be clean.
        for (const h of redis) {
          checks++;
          if (h.text.includes(bytes) && !(name === "client" && /:g\d+:in$/.test(h.where))) hits.push(`${name} (${needle.slice(0, 8)}…) in ${h.where}`);
        }
      }
    }
    console.log(
      `SECRETS_SCAN secrets=${Object.keys(secrets).length} encodings=${Object.values(secrets).reduce((n, s) => n + encodings(s).length, 0)} ` +
        `log_lines=${ingress.lines.length + worker.lines.length} spans=${haystacks.filter((h) => h.where.startsWith("span")).length} ` +
        `postgres_rows=${haystacks.filter((h) => h.where.startsWith("postgres")).length} redis_values=${redis.length} checks=${checks} hits=${hits.length}`,
    );
    expect(hits).toEqual([]);
    expect(haystacks.filter((h) => h.where.startsWith("postgres")).length).toBeGreaterThan(0);
    expect(redis.length).toBeGreaterThan(0);
  });
});
