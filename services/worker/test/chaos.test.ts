// Chaos soak with real processes: 2 ingress + 2 workers on the local Redis and Postgres,
// overlapping streaming turns (half in privacy mode) while workers and ingress replicas are
// killed with SIGKILL at random and restarted; readers reconnect to a live replica with
// x-gateway-resume-after. Per turn: it ends {}; the frames read equal the stored output stream
// byte for byte; every provider request carried the turn's prompt (also after takeovers); the
// ledger has exactly one `ok` row. CI runs a small round (CHAOS_TURNS, CHAOS_KILLS);
// `npm run chaos` a longer one. Prints one CHAOS line with the counts.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectItems, createCursorClient, runRequestMessage } from "@byok/testing";
import type { AgentServerMessage } from "@byok/wire";
import { decodeFrames, encodeFrames, jobOwner, xrangeFrames } from "./frames.js";
import { DATABASE_URL, startTestCluster, TEST_MODEL, type ServiceProcess, type TestCluster } from "./process-harness.js";

const TURNS = Number(process.env.CHAOS_TURNS ?? "8");
const KILLS = Number(process.env.CHAOS_KILLS ?? "2");
const CHUNKS = Number(process.env.CHAOS_CHUNKS ?? "30");

describe("chaos soak (real processes)", () => {
  let c: TestCluster;
  beforeAll(async () => {
    // Ended streams must stay readable until every turn is compared with its stored output.
    c = await startTestCluster({ ingress: 2, workers: 2, env: { GATEWAY_FINISHED_RETENTION_MS: "900000" } });
  }, 300_000);
  afterAll(async () => {
    await c?.close();
  });

  it(`${TURNS} overlapping turns survive up to ${KILLS} random kill -9 of workers and ingress replicas`, async () => {
    const live = { ingress: [...c.ingress], workers: [...c.workers] };
    const prompts = Array.from({ length: TURNS }, (_, i) => `chaos prompt ${i} ${randomUUID()}`);
    for (let i = 0; i < TURNS * 3; i++) c.sim.enqueue({ text: Array.from({ length: CHUNKS }, (_, k) => `t${k} `), chunkDelayMs: 60 });

    let reconnects = 0;
    let progress = 0;
    let ended = 0;
    const liveTurns = new Set<string>();
    const pickIngress = () => live.ingress[Math.floor(Math.random() * live.ingress.length)]!;
    const turn = async (i: number) => {
      const requestId = `chaos-${i}-${randomUUID()}`;
      liveTurns.add(requestId);
      const ghost = i % 2 === 1;
      const headers: Record<string, string> = ghost ? { "x-ghost-mode": "true" } : {};
      const client = () => createCursorClient({ baseUrl: pickIngress().url, authToken: c.authToken });
      const read: AgentServerMessage[] = [];
      const sleep = () => new Promise((ok) => setTimeout(ok, 200));
      // Any step may meet a replica that just died: retry it on a live one.
      const open = async (resumeAfter: number) => {
        for (;;) {
          try {
            return (await client().runSse(requestId, { headers, resumeAfter })).frames;
          } catch {
            await sleep();
          }
        }
      };
      let items = await open(0);
      for (;;) {
        const r = await client()
          .append(requestId, 1, runRequestMessage({ text: prompts[i]!, conversationId: `conv-${requestId}`, modelId: TEST_MODEL }), { headers })
          .catch(() => ({ ok: false }));
        if (r.ok) break;
        await sleep();
      }
      for (;;) {
        let out;
        try {
          out = await collectItems(items, (m) => {
            read.push(m);
            progress++;
          });
        } catch {
          out = undefined; // the connection died with its replica
        }
        if (out?.end) {
          liveTurns.delete(requestId);
          ended++;
          return { requestId, read, end: out.end, ghost };
        }
        reconnects++;
        items = await open(read.length);
      }
    };

    let kills = 0;
    const respawns: Promise<void>[] = [];
    const chaos = (async () => {
      for (let k = 0; k < KILLS; k++) {
        // Kill only while turns stream: after some frames, and never after the last turn ended.
        const from = progress;
        while (progress < from + 2 * TURNS && ended < TURNS) await new Promise((ok) => setTimeout(ok, 50));
        if (ended === TURNS) break;
        // Alternating, a worker first, then an ingress; the worker running a live turn when there is one.
        const preferred = k % 2 === 0 ? "workers" : "ingress";
        // Keep one of each kind alive while the victim's replacement starts.
        const kind = live[preferred].length >= 2 ? preferred : preferred === "workers" ? "ingress" : "workers";
        const pool = live[kind];
        if (pool.length < 2) {
          await new Promise((ok) => setTimeout(ok, 200));
          continue;
        }
        let at = Math.floor(Math.random() * pool.length);
        if (kind === "workers") {
          const live1 = [...liveTurns][0];
          const owner = live1 ? await jobOwner(c.redis, c.queuePrefix, { tenantId: "default", requestId: live1 }, 1).catch(() => undefined) : undefined;
          const j = pool.findIndex((w) => w.name === owner);
          if (j >= 0) at = j;
        }
        const victim: ServiceProcess = pool.splice(at, 1)[0]!;
        victim.signal("SIGKILL");
        await victim.exited;
        kills++;
        // Restarted in the background, so the next kill does not wait for it.
        respawns.push(c.spawn(kind === "workers" ? "worker" : "ingress").then((p) => void pool.push(p)));
      }
    })();
    const turns = await Promise.all(prompts.map((_, i) => new Promise<void>((ok) => setTimeout(ok, i * 150)).then(() => turn(i))));
    await chaos;
    await Promise.all(respawns);

    let frames = 0;
    for (const t of turns) {
      expect(t.end, t.requestId).toEqual({ ok: true });
      const stored = decodeFrames(await xrangeFrames(c.redis, c.keyPrefix, { tenantId: "default", requestId: t.requestId }, 1));
      expect(encodeFrames(t.read), t.requestId).toEqual(encodeFrames(stored));
      frames += stored.length;
    }
    // Every provider request (first attempts, retries and re-runs after a takeover) carried a turn's prompt.
    const bodies = c.sim.requests.map((r) => JSON.stringify(r.body));
    for (const b of bodies) expect(prompts.some((p) => b.includes(p)), b.slice(0, 300)).toBe(true);

    const db = new pg.Client({ connectionString: DATABASE_URL });
    await db.connect();
    let rows = 0;
    try {
      for (const [i, t] of turns.entries()) {
        const r = await db.query<{ outcome: string }>(`SELECT outcome FROM "${c.schema}".usage_ledger WHERE request_id = $1`, [t.requestId]);
        rows += r.rows.length;
        expect(r.rows.filter((x) => x.outcome === "ok"), t.requestId).toHaveLength(1);
        const attempts = bodies.filter((b) => b.includes(prompts[i]!)).length;
        expect(r.rows.length, `${t.requestId}: one ledger row per provider request`).toBe(attempts);
      }
    } finally {
      await db.end();
    }
    const takeovers = bodies.length - TURNS;
    console.log(`CHAOS turns=${TURNS} ghost_turns=${turns.filter((t) => t.ghost).length} kills=${kills} extra_provider_requests=${takeovers} reconnects=${reconnects} frames_checked=${frames} provider_requests=${bodies.length} ledger_rows=${rows}`);
  }, 600_000);
});
