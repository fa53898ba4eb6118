// Usage recorded through a Postgres outage (real processes on a private Postgres cluster): a
// privacy-mode turn that finishes while the database is down keeps its ledger row — the worker
// holds it in the Redis ledger spool — and the row is written once the database is back, once
// (docs/reliability.md "Usage during a Postgres outage").
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCursorClient, metricSum, postgresBinDir, runRequestMessage, scrapeMetrics, startPostgresServer, type PrivatePostgres } from "@byok/testing";
import { SERVICE_START_MS, startTestCluster, TEST_MODEL, waitFor, type TestCluster } from "./process-harness.js";

describe.skipIf(!postgresBinDir())("usage during a Postgres outage (real processes)", () => {
  let db: PrivatePostgres;
  let c: TestCluster;
  beforeAll(async () => {
    db = await startPostgresServer();
    c = await startTestCluster({ ingress: 1, workers: 1, databaseUrl: db.url, env: { GATEWAY_LEDGER_SPOOL_DRAIN_MS: "200" } });
    // The cluster's schema and keys survive the immediate shutdown below.
    await db.checkpoint();
  }, 2 * SERVICE_START_MS);
  afterAll(async () => {
    await db?.start().catch(() => undefined);
    await c?.close();
    await db?.destroy();
  });

  const ledgerRows = async (requestId: string) => {
    const client = new pg.Client({ connectionString: c.databaseUrl });
    await client.connect();
    try {
      const r = await client.query<{ outcome: string; output_tokens: string }>(
        `select outcome, output_tokens from "${c.schema}".usage_ledger where tenant_id = 'default' and request_id = $1`,
        [requestId],
      );
      return r.rows.map((row) => ({ outcome: row.outcome, outputTokens: Number(row.output_tokens) }));
    } finally {
      await client.end();
    }
  };

  it("a privacy-mode turn that ends while Postgres is down gets its ledger row once Postgres is back", async () => {
    const client = createCursorClient({ baseUrl: c.ingress[0]!.url, authToken: c.authToken, ghostMode: true });
    const chunks = Array.from({ length: 30 }, (_, i) => `w${i} `);
    c.sim.enqueue({ text: chunks, chunkDelayMs: 100 });
    const requestId = `outage-${randomUUID()}`;
    let streaming = false;
    const turn = client.runTurn({
      requestId,
      message: runRequestMessage({ text: "during the outage", conversationId: `conv-${requestId}`, modelId: TEST_MODEL }),
      // The model's text, not the run's first checkpoint: the attempt was admitted (its price and
      // budget read from Postgres) before the database goes away.
      onMessage: (m) => void (streaming ||= m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta"),
    });
    await waitFor(() => streaming, 30_000, "the turn streaming");
    await db.stop();

    const done = await turn;
    expect(done.end).toEqual({ ok: true });
    expect(done.textDeltas).toBe(chunks.join(""));
    // Held in the Redis spool while the database is down.
    const spoolKey = `${c.keyPrefix}:ledger-spool`;
    await waitFor(async () => (await c.redis.llen(spoolKey)) === 1, 30_000, "the attempt's row held");
    expect(metricSum(await scrapeMetrics(c.workers[0]!.url), "byok_ledger_spool_rows_total", { outcome: "held" })).toBe(1);

    await db.start();
    await waitFor(async () => (await c.redis.llen(spoolKey)) === 0, 60_000, "the spool drained");
    const rows = await ledgerRows(requestId);
    expect(rows).toEqual([{ outcome: "ok", outputTokens: expect.any(Number) }]);
    expect(rows[0]!.outputTokens).toBeGreaterThan(0);
    // Every process drains the spool (the ingress meters the compatible endpoints): whichever
    // wrote the row counted it, once across them all.
    const all = await Promise.all([...c.ingress, ...c.workers].map((p) => scrapeMetrics(p.url)));
    const sum = (name: string, labels: Record<string, string>) => all.reduce((n, m) => n + metricSum(m, name, labels), 0);
    expect(sum("byok_ledger_spool_rows_total", { outcome: "recorded" })).toBe(1);
    expect(sum("byok_ledger_spool_rows_total", { outcome: "lost" })).toBe(0);
    // The row's tokens moved the token counter when it was written, not before.
    expect(sum("byok_tokens_total", { kind: "output" })).toBe(rows[0]!.outputTokens);
  }, 180_000);
});
