// Chaos soak with real processes: 2 ingress + 2 workers on a private redis-server and a private
// Postgres cluster (never the shared ones: both are restarted here). Three rounds on the same
// processes:
// 1. overlapping turns (half in privacy mode, a third with a tool round trip) while workers and
//    ingress replicas are killed with SIGKILL at random and restarted; readers reconnect to a
//    live replica with x-gateway-resume-after. Per turn: it ends {}; the frames read equal the
//    stored output stream byte for byte; every provider request (re-runs after a takeover
//    included) carried the turn's prompt, and each pass after the tool result carried the
//    result; one ledger row per provider request and exactly one `ok` per model call;
// 2. Redis killed and restarted mid-stream: every turn in flight ends with a clear
//    `unavailable`, no process exits, and new turns pass every check of round 1 once it is back;
// 3. the same with a Postgres restart (immediate shutdown, as after a crash), plus a turn
//    started during the outage, refused `unavailable` at once (a privacy-mode turn in flight
//    writes no history and may finish {}).
// CI runs a small round 1 (CHAOS_TURNS, CHAOS_KILLS, CHAOS_CHUNKS); `npm run chaos` a longer
// one. Prints one CHAOS line with the counts (docs/reliability.md).
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  collectItems, ConnectHttpError, createCursorClient, execResultMessage, postgresBinDir, runRequestMessage, startPostgresServer,
  type PrivatePostgres, type SimRequest, type SimScript,
} from "@byok/testing";
import type { AgentClientMessage, AgentServerMessage } from "@byok/wire";
import { decodeFrames, encodeFrames, jobOwner, xrangeFrames } from "./frames.js";
import { SERVICE_START_MS, startTestCluster, TEST_MODEL, waitFor, type ServiceKind, type ServiceProcess, type TestCluster } from "./process-harness.js";
import { freePort, haveRedisServer, killRedisServer, startRedisServer } from "./redis-servers.js";

const TURNS = Number(process.env.CHAOS_TURNS ?? "8");
const KILLS = Number(process.env.CHAOS_KILLS ?? "2");
const CHUNKS = Number(process.env.CHAOS_CHUNKS ?? "30");
/** Turns streaming when Redis or Postgres goes away, and turns checked after each comes back. */
const OUTAGE_TURNS = 4;
const AFTER_TURNS = 3;

interface TurnPlan {
  n: number;
  requestId: string;
  prompt: string;
  ghost: boolean;
  /** The model calls Read first; the client answers with `fileContent`; the model then streams text. */
  tool: boolean;
  fileContent: string;
  chunks: number;
  chunkDelayMs: number;
}

interface TurnResult {
  plan: TurnPlan;
  requestId: string;
  read: AgentServerMessage[];
  /** The end-stream, or the HTTP refusal of the stream. */
  end: { ok: true } | { ok: false; code: string; message: string };
  reconnects: number;
}

const turnTag = (n: number) => `chaos-turn-${n}-`;
/** The clock of the turns' trails and the kill log, so a failing turn can be read against the kills. */
const T0 = Date.now();
const killLog: string[] = [];
/** Each turn's client trail, by request id, while it runs and after. */
const trails = new Map<string, string[]>();

describe.runIf(haveRedisServer && postgresBinDir() !== undefined)("chaos soak (real processes, private Redis and Postgres)", () => {
  let c: TestCluster;
  let redisPort: number;
  let redis: ChildProcess;
  let pgServer: PrivatePostgres;
  const plans = new Map<number, TurnPlan>();
  let nextTurn = 0;
  const live = { ingress: [] as ServiceProcess[], workers: [] as ServiceProcess[] };
  /** Every process started, the killed ones included: their logs explain a failed turn. */
  const everyProcess: ServiceProcess[] = [];
  const counts = { turns: 0, ghostTurns: 0, toolTurns: 0, kills: 0, reconnects: 0, framesChecked: 0, providerRequests: 0, ledgerRows: 0, outageTurnsUnavailable: 0, redisRestarts: 0, postgresRestarts: 0 };

  /** The simulator's answer, from the turn named in the request: a tool call first for tool turns, else text. */
  const script = (req: SimRequest): SimScript => {
    const n = Number(/chaos-turn-(\d+)-/.exec(req.rawBody)?.[1] ?? "-1");
    const plan = plans.get(n);
    if (!plan) return { text: "unplanned request" };
    if (plan.tool && !req.rawBody.includes(plan.fileContent)) {
      return { toolCalls: [{ name: "Read", arguments: JSON.stringify({ path: `chaos-${n}.txt` }) }] };
    }
    return { text: Array.from({ length: plan.chunks }, (_, k) => `t${k} `), chunkDelayMs: plan.chunkDelayMs };
  };

  beforeAll(async () => {
    redisPort = await freePort();
    [redis, pgServer] = await Promise.all([startRedisServer(redisPort), startPostgresServer()]);
    // Ended streams must stay readable until every turn is compared with its stored output.
    c = await startTestCluster({
      ingress: 2,
      workers: 2,
      redisUrl: `redis://127.0.0.1:${redisPort}`,
      databaseUrl: pgServer.url,
      // Four services start at once, and their replacements while turns stream.
      startMs: 2 * SERVICE_START_MS,
      // A lost exec answer shows as a tool timeout within a minute, not a 10-minute hang.
      env: { GATEWAY_FINISHED_RETENTION_MS: "900000", GATEWAY_TOOL_TIMEOUT_MS: "60000", GATEWAY_LOG_LEVEL: "debug" },
    });
    live.ingress.push(...c.ingress);
    live.workers.push(...c.workers);
    everyProcess.push(...c.ingress, ...c.workers);
  }, 3 * SERVICE_START_MS);
  afterAll(async () => {
    await c?.close().catch(() => undefined); // the schema is dropped with the cluster below
    if (redis) await killRedisServer(redis);
    await pgServer?.destroy();
  });

  const plan = (init: Partial<TurnPlan> = {}): TurnPlan => {
    const n = nextTurn++;
    const p: TurnPlan = {
      n,
      requestId: `chaos-${n}-${randomUUID()}`,
      prompt: `${turnTag(n)} prompt ${randomUUID()}`,
      ghost: n % 2 === 1,
      tool: n % 3 === 2,
      fileContent: `file ${n} content ${randomUUID()}`,
      chunks: CHUNKS,
      chunkDelayMs: 60,
      ...init,
    };
    plans.set(n, p);
    // One script per provider request, whichever turn sends it: a turn's passes and a re-run
    // after each kill of a worker it may have been running on.
    c.sim.enqueue(...Array.from({ length: 2 + KILLS }, () => script));
    return p;
  };

  const pickIngress = () => live.ingress[Math.floor(Math.random() * live.ingress.length)]!;
  const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

  /**
   * Drives one turn like a Cursor client over HTTP/1.1: RunSSE, the run_request, exec answers;
   * any step that meets a dead replica is retried on a live one, the reader resuming after the
   * frames it has. A stream that ends (any status) or an HTTP refusal ends the turn.
   */
  async function turn(p: TurnPlan, progress: { frames: number }): Promise<TurnResult> {
    const { requestId } = p;
    const headers: Record<string, string> = p.ghost ? { "x-ghost-mode": "true" } : {};
    const client = () => createCursorClient({ baseUrl: pickIngress().url, authToken: c.authToken });
    const read: AgentServerMessage[] = [];
    let seqno = 1;
    let reconnects = 0;
    const answered = new Set<string>();
    const trail: string[] = [];
    trails.set(requestId, trail);
    const note = (what: string) => void trail.push(`+${Date.now() - T0}ms ${what}`);
    const appendNext = async (msg: AgentClientMessage) => {
      const s = seqno++;
      for (;;) {
        const r = await client().append(requestId, s, msg, { headers }).catch(() => ({ ok: false as const, code: "connection" }));
        note(`append seqno=${s} ${msg.message.case}: ${r.ok ? "ok" : `${r.code}${"message" in r ? ` ${String(r.message)}` : ""}`}`);
        if (r.ok) return;
        // A refusal is final (the turn's end tells why); a dead replica is not.
        if (r.code !== "connection") return;
        await sleep(200);
      }
    };
    const open = async (resumeAfter: number) => {
      for (;;) {
        try {
          note(`RunSSE resume-after=${resumeAfter}`);
          return (await client().runSse(requestId, { headers, resumeAfter })).frames;
        } catch {
          await sleep(200);
        }
      }
    };
    let items = await open(0);
    await appendNext(runRequestMessage({ text: p.prompt, conversationId: `conv-${requestId}`, modelId: TEST_MODEL }));
    for (;;) {
      let out;
      try {
        out = await collectItems(items, async (m) => {
          read.push(m);
          progress.frames++;
          note(`frame ${read.length}: ${m.message.case}${m.message.case === "execServerMessage" ? `/${m.message.value.message.case}` : ""}`);
          if (m.message.case !== "execServerMessage") return;
          const exec = m.message.value;
          if (exec.message.case !== "readArgs") return;
          const { path } = exec.message.value;
          const key = `${exec.id}:${exec.execId}`;
          if (answered.has(key)) return;
          answered.add(key);
          await appendNext(
            execResultMessage({
              id: exec.id,
              execId: exec.execId,
              result: {
                case: "readResult",
                value: {
                  result: {
                    case: "success",
                    value: { path, totalLines: 1, fileSize: BigInt(p.fileContent.length), truncated: false, rangeApplied: false, output: { case: "content", value: p.fileContent } },
                  },
                },
              },
            }),
          );
        });
      } catch (err) {
        // An HTTP refusal (the replica could not serve the stream) ends the turn like an end-stream.
        if (err instanceof ConnectHttpError) return { plan: p, requestId, read, end: { ok: false, code: err.error.code, message: err.error.message }, reconnects };
        note(`stream broke: ${err instanceof Error ? err.message : String(err)}`);
        out = undefined; // the connection died with its replica
      }
      if (out?.end) return { plan: p, requestId, read, end: out.end.ok ? { ok: true } : { ok: false, code: out.end.code, message: out.end.message }, reconnects };
      reconnects++;
      items = await open(read.length);
    }
  }

  /** Every check of a turn that ended {}: stored frames, prompts, tool results, ledger rows. */
  async function checkTurns(turns: TurnResult[]): Promise<void> {
    const db = new pg.Client({ connectionString: c.databaseUrl });
    await db.connect();
    try {
      for (const t of turns) {
        try {
          await checkTurn(db, t);
        } catch (err) {
          explain(t.plan);
          throw err;
        }
      }
    } finally {
      await db.end();
    }
  }

  /** Prints what the client did and saw and every process's log lines of the turn. */
  function explain(p: TurnPlan): void {
    const logs = everyProcess.flatMap((x) => x.lines.filter((l) => l.includes(p.requestId)).map((l) => `${x.name}: ${l.slice(0, 600)}`));
    const exits = everyProcess.filter((x) => x.exitCode() !== undefined).map((x) => `${x.name} exited ${String(x.exitCode())}`);
    console.log(`CHAOS failed turn ${p.requestId} (ghost=${p.ghost}, tool=${p.tool}):\n${[...killLog, ...exits, ...(trails.get(p.requestId) ?? []), ...logs].join("\n")}`);
  }

  /** Waits for the outage round's turns to stream; explains them when they do not. */
  async function streaming(plans: TurnPlan[], progress: { frames: number }): Promise<void> {
    try {
      await waitFor(() => progress.frames >= 3 * plans.length, 30_000, "turns streaming");
    } catch (err) {
      for (const p of plans) explain(p);
      throw err;
    }
  }

  async function checkTurn(db: pg.Client, t: TurnResult): Promise<void> {
    const { plan: p, requestId } = t;
    expect(t.end, requestId).toEqual({ ok: true });
    const stored = decodeFrames(await xrangeFrames(c.redis, c.keyPrefix, { tenantId: "default", requestId }, 1));
    expect(encodeFrames(t.read), requestId).toEqual(encodeFrames(stored));
    counts.framesChecked += stored.length;
    // The user got the whole answer: the text after the last server notice (a re-run after a
    // takeover starts over after one) is every chunk the model streamed, in order.
    const texts = t.read.flatMap((m) =>
      m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta" ? [m.message.value.message.value] : [],
    );
    const lastNotice = texts.findLastIndex((d) => d.isServerNotice);
    const answer = texts.slice(lastNotice + 1).map((d) => d.text).join("");
    expect(answer, `${requestId}: the whole answer after the last notice`).toBe(Array.from({ length: p.chunks }, (_, k) => `t${k} `).join(""));
    // Every provider request of the turn carried the full prompt; after the tool result, every pass carried it too.
    const mine = c.sim.requests.filter((r) => r.rawBody.includes(turnTag(p.n)));
    for (const r of mine) expect(r.rawBody, requestId).toContain(p.prompt);
    const passes = p.tool ? 2 : 1;
    if (p.tool) expect(mine.some((r) => r.rawBody.includes(p.fileContent)), `${requestId}: the model got the tool result`).toBe(true);
    const rows = await db.query<{ outcome: string; model_call_id: string; attempt: number; created_at: Date }>(
      `SELECT outcome, model_call_id, attempt, created_at FROM "${c.schema}".usage_ledger WHERE request_id = $1 ORDER BY created_at`,
      [requestId],
    );
    // One row per provider request; beyond those only `interrupted` rows: a takeover marks the
    // cut attempt, which the dead owner may have killed before its request left.
    const interrupted = rows.rows.filter((x) => x.outcome === "interrupted").length;
    expect(rows.rows.length, `${requestId}: one ledger row per provider request`).toBeGreaterThanOrEqual(mine.length);
    expect(rows.rows.length - mine.length, `${requestId}: extra rows are interrupted marks`).toBeLessThanOrEqual(interrupted);
    const ok = rows.rows.filter((x) => x.outcome === "ok");
    expect(ok, `${requestId}: one ok per pass; rows ${JSON.stringify(rows.rows)}`).toHaveLength(passes);
    expect(new Set(ok.map((x) => x.model_call_id)).size, `${requestId}: one ok per model call`).toBe(passes);
    counts.ledgerRows += rows.rows.length;
    counts.providerRequests += mine.length;
    counts.turns++;
    counts.reconnects += t.reconnects;
    if (p.ghost) counts.ghostTurns++;
    if (p.tool) counts.toolTurns++;
  }

  const everyProcessAlive = () => {
    for (const p of [...live.ingress, ...live.workers]) expect(p.exitCode(), `${p.kind} ${p.name}`).toBeUndefined();
  };
  const allReady = async () => {
    for (const p of [...live.ingress, ...live.workers]) {
      try {
        await waitFor(async () => (await fetch(`${p.url}/readyz`).catch(() => undefined))?.status === 200, 60_000, `${p.kind} ready again`);
      } catch (err) {
        console.log(`${p.kind} ${p.name} exit=${String(p.exitCode())}\n${p.lines.filter((l) => !/"level":(10|20|30)\b/.test(l)).slice(-40).join("\n").slice(-12000)}`);
        throw err;
      }
    }
  };
  /** Turns after an outage: staggered, with a tool round trip among them, every check of round 1. */
  const turnsAfterOutage = async () => {
    const progress = { frames: 0 };
    const plansAfter = Array.from({ length: AFTER_TURNS }, (_, i) => plan({ tool: i === 0, chunks: 10 }));
    await checkTurns(await Promise.all(plansAfter.map((p) => turn(p, progress))));
  };

  it(`${TURNS} overlapping turns (text and tool round trips) survive ${KILLS} random kill -9 of workers and ingress replicas`, async () => {
    const progress = { frames: 0 };
    let ended = 0;
    const liveTurns = new Set<string>();
    const plansNow = Array.from({ length: TURNS }, () => plan());
    const respawns: Promise<void>[] = [];
    const chaos = (async () => {
      while (counts.kills < KILLS && ended < TURNS) {
        // Kill only while turns stream: after some frames since the last kill.
        const from = progress.frames;
        while (progress.frames < from + 2 * TURNS && ended < TURNS) await sleep(50);
        // One of each kind stays alive while a victim's replacement starts: wait for a kind with two.
        const preferred: "workers" | "ingress" = counts.kills % 2 === 0 ? "workers" : "ingress";
        const other = preferred === "workers" ? "ingress" : "workers";
        const kind = live[preferred].length >= 2 ? preferred : live[other].length >= 2 ? other : undefined;
        if (kind === undefined) {
          await sleep(100);
          continue;
        }
        if (ended >= TURNS) break;
        const pool = live[kind];
        let at = Math.floor(Math.random() * pool.length);
        if (kind === "workers") {
          // The worker running a live turn, when there is one.
          const liveOne = [...liveTurns][Math.floor(Math.random() * liveTurns.size)];
          const owner = liveOne ? await jobOwner(c.redis, c.queuePrefix, { tenantId: "default", requestId: liveOne }, 1).catch(() => undefined) : undefined;
          const j = pool.findIndex((w) => w.name === owner);
          if (j >= 0) at = j;
        }
        const victim = pool.splice(at, 1)[0]!;
        victim.signal("SIGKILL");
        await victim.exited;
        killLog.push(`+${Date.now() - T0}ms killed ${kind} ${victim.name}`);
        counts.kills++;
        const respawnKind: ServiceKind = kind === "workers" ? "worker" : "ingress";
        // Restarted in the background, so a kill of the other kind does not wait for it.
        respawns.push(c.spawn(respawnKind).then((p) => void (pool.push(p), everyProcess.push(p))));
      }
    })();
    const turns = await Promise.all(
      plansNow.map(async (p, i) => {
        await sleep(i * 150);
        liveTurns.add(p.requestId);
        try {
          return await turn(p, progress);
        } finally {
          liveTurns.delete(p.requestId);
          ended++;
        }
      }),
    );
    await chaos;
    await Promise.all(respawns);
    await checkTurns(turns);
    expect(counts.kills).toBe(KILLS);
  }, 900_000);

  it("Redis killed and restarted mid-stream: the turns in flight end unavailable, no process exits, new turns pass every check", async () => {
    const progress = { frames: 0 };
    const inFlight = Array.from({ length: OUTAGE_TURNS }, () => plan({ tool: false, chunks: 200, chunkDelayMs: 30 }));
    const turns = inFlight.map((p) => turn(p, progress));
    await streaming(inFlight, progress);
    await killRedisServer(redis);
    const ends = await Promise.all(turns);
    for (const t of ends) {
      expect(t.end, t.requestId).toMatchObject({ ok: false, code: "unavailable" });
      expect(t.end.ok ? "" : t.end.message, t.requestId).toMatch(/message bus is unavailable/);
    }
    counts.outageTurnsUnavailable += ends.length;
    redis = await startRedisServer(redisPort);
    counts.redisRestarts++;
    await allReady();
    everyProcessAlive();
    await turnsAfterOutage();
    everyProcessAlive();
  }, 300_000);

  it("Postgres restarted mid-stream: the turns in flight and a turn during the outage end unavailable, no process exits, new turns pass every check", async () => {
    const progress = { frames: 0 };
    const inFlight = Array.from({ length: OUTAGE_TURNS }, () => plan({ tool: false, chunks: 60, chunkDelayMs: 30 }));
    const turns = inFlight.map((p) => turn(p, progress));
    await streaming(inFlight, progress);
    await pgServer.stop();
    const ends = await Promise.all(turns);
    // A turn started while the database is down is refused (the API key cannot be checked),
    // while it is still down: a hang would run into the test's timeout.
    const during = await turn(plan({ tool: false }), progress);
    // A turn that stores history ends unavailable; a privacy-mode turn stores none and may finish.
    for (const t of [...ends, during]) {
      if (t.end.ok && t.plan.ghost && t !== during) continue;
      if (t.end.ok || t.end.code !== "unavailable") {
        for (const w of live.workers) console.log(w.lines.filter((l) => l.includes(t.requestId) || /run job failed/.test(l)).slice(-8).join("\n").slice(0, 6000));
        console.log(JSON.stringify(t.end));
      }
      expect(t.end, t.requestId).toMatchObject({ ok: false, code: "unavailable" });
      expect(t.end.ok ? "" : t.end.message, t.requestId).toMatch(/(database|key store) (is|was) unavailable/);
      counts.outageTurnsUnavailable++;
    }
    await pgServer.start();
    counts.postgresRestarts++;
    await allReady();
    everyProcessAlive();
    await turnsAfterOutage();
    everyProcessAlive();
    console.log(
      `CHAOS turns_checked=${counts.turns} ghost_turns=${counts.ghostTurns} tool_turns=${counts.toolTurns} kills=${counts.kills} reconnects=${counts.reconnects} ` +
        `frames_checked=${counts.framesChecked} provider_requests=${counts.providerRequests} ledger_rows=${counts.ledgerRows} ` +
        `redis_restarts=${counts.redisRestarts} postgres_restarts=${counts.postgresRestarts} outage_turns_unavailable=${counts.outageTurnsUnavailable}`,
    );
  }, 300_000);
});
