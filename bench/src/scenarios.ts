// Load scenarios. The load generator (this process) drives real gateway processes over HTTP/1.1
// with the Cursor-protocol test client; the provider simulator runs here too.
import { randomUUID } from "node:crypto";
import type { ClientRequest } from "node:http";
import { performance } from "node:perf_hooks";
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { runJobId } from "@byok/bus";
import { createCursorClient, holdIdleRunSse, nodeHttpTransport, runRequestMessage, startSimulator, waitFor, type CursorClient, type Simulator, type SimScript } from "@byok/testing";
import type { ConversationStateStructure } from "@byok/wire";
import { metric, type Proc } from "./services.js";
import { percentile, round } from "./stats.js";

export const MODEL = "bench-model";

/** Deltas of a paced turn (BENCH_TTFT_DELTAS, 60): longer turns put the per-frame cost ahead of the fixed one in a profile. */
const TTFT_DELTAS = positiveInt("BENCH_TTFT_DELTAS", 60);

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * Turns every measured turn's conversation already has (BENCH_CONVERSATION_TURNS, 0; bench:levers):
 * each turn continues a conversation of that many turns, as a Cursor client does, with the final
 * checkpoint of the turn before as its `conversation_state` (whose turns the gateway resolves
 * from the blobs it stored). `earlierConversations` builds them before the measured turns.
 */
const CONVERSATION_TURNS = process.env.BENCH_CONVERSATION_TURNS ? positiveInt("BENCH_CONVERSATION_TURNS", 1) : 0;

/** Scripts by prompt kind; the simulator records when it starts answering each tagged prompt. */
export const SCRIPTS: Record<string, SimScript> = {
  ttft: { text: Array.from({ length: TTFT_DELTAS }, (_, i) => `t${i} `), chunkDelayMs: 50, usage: { inputTokens: 10, outputTokens: TTFT_DELTAS } },
  tput: { text: Array.from({ length: 200 }, (_, i) => `x${i} `), usage: { inputTokens: 10, outputTokens: 200 } },
  slow: { text: Array.from({ length: 150 }, (_, i) => `s${i} `), chunkDelayMs: 100, usage: { inputTokens: 10, outputTokens: 150 } },
  /** One delta: a turn that is all fixed cost (run start, pass, end), for profiles of exactly that. */
  fixed: { text: ["ok"], usage: { inputTokens: 10, outputTokens: 1 } },
};

/** The kinds of turn the load scenarios drive (SCRIPTS' keys but `slow`, which takeover trials use). */
export type TurnKind = "ttft" | "tput" | "fixed";

/** BENCH_KIND as a turn kind: `tput` (bursts), `fixed` (one delta), otherwise `ttft` (paced). */
export function benchKind(value: string | undefined): TurnKind {
  return value === "tput" || value === "fixed" ? value : "ttft";
}

export interface BenchSim {
  sim: Simulator;
  /** performance.now() when the simulator started answering the prompt tag (first frame written right after). */
  answeredAt: Map<string, number>;
}

export async function startBenchSim(): Promise<BenchSim> {
  const answeredAt = new Map<string, number>();
  const sim = await startSimulator({
    defaultScript: (req) => {
      // The prompt's last tag is its turn's: earlier turns of the conversation come before it.
      const m = [...req.rawBody.matchAll(/bench-(ttft|tput|slow|fixed)-[0-9a-f-]{36}/g)].at(-1);
      if (!m) return { text: "?" };
      // A second request for the same prompt is the re-run after a takeover: answer it briefly.
      if (answeredAt.has(m[0])) return { text: ["resumed ", "after ", "takeover"] };
      answeredAt.set(m[0], performance.now());
      return SCRIPTS[m[1]!]!;
    },
  });
  return { sim, answeredAt };
}

/** Gateway settings every benchmarked gateway process shares (simulator routes, quiet logs). */
export function benchGatewayEnv(simUrl: string): Record<string, string> {
  return {
    GATEWAY_LOG_LEVEL: "warn",
    GATEWAY_HOST: "127.0.0.1",
    GATEWAY_PORT: "0",
    GATEWAY_ALLOW_PRIVATE_BASE_URLS: "true",
    BENCH_PROVIDER_KEY: "sk-bench-not-a-real-key-0123456789",
    GATEWAY_ROUTES_JSON: routesJson(simUrl),
    // The load generator reads RunSSE without answering KV blob requests.
    GATEWAY_KV_ACK_TIMEOUT_MS: "300",
  };
}

export function routesJson(simUrl: string): string {
  return JSON.stringify([{ modelId: MODEL, targets: [{ provider: "openai-chat", model: "sim", baseUrl: `${simUrl}/v1`, apiKeyEnv: "BENCH_PROVIDER_KEY" }] }]);
}

export interface TurnsResult {
  turns: number;
  /** Most turns streaming at the same time. */
  peakConcurrent: number;
  ok: number;
  /** Client first text_delta − simulator's first text frame (ms). */
  ttftOverheadP50: number;
  ttftOverheadP99: number;
  frames: number;
  seconds: number;
  framesPerSecond: number;
  /** Provider deltas that reached clients per second (coalescing puts several in one frame). */
  deltasPerSecond: number;
  /** Turns not ok, by why: the end-stream's code, `truncated` (no end-stream), or the client's error. */
  failures: Record<string, number>;
}

/** What one driven turn reports. */
interface TurnOutcome {
  first: number | undefined;
  frames: number;
  ok: boolean;
  /** Why not ok. */
  failure?: string;
}

/**
 * `count` turns over `urls` (round robin), started evenly over `rampMs`. kind `ttft`: 60 deltas
 * 50 ms apart (3 s each, so with a 3 s ramp all of them stream at once), TTFT overhead measured;
 * kind `tput`: 200 deltas as fast as the simulator writes them, all started at once, frames/s.
 * Turn i continues `conversations[i]` when there is one (`earlierConversations`), else starts one.
 */
export async function runTurns(
  bs: BenchSim, urls: string[], count: number, kind: TurnKind, rampMs = 0, authToken?: string, conversations: readonly EarlierConversation[] = [],
): Promise<TurnsResult> {
  const clients = benchClients(urls, authToken);
  return driveTurns(bs, count, kind, rampMs, async (i, tag) => {
    let first: number | undefined;
    const earlier = conversations[i];
    const r = await clients[i % clients.length]!.runTurn({
      requestId: `${tag}-r`,
      message: runRequestMessage({ text: tag, conversationId: earlier?.conversationId ?? `${tag}-c`, modelId: MODEL, ...(earlier ? { conversationState: earlier.state } : {}) }),
      onMessage: (m) => {
        if (first === undefined && m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta") first = performance.now();
      },
    });
    // A refused BidiAppend explains a stream that then ends not_found (its run never started).
    const refused = r.appends.find((a) => !a.ok);
    const end = r.end === undefined ? (r.httpError ? `http ${r.status}` : "truncated") : r.end.ok ? undefined : r.end.code;
    const failure = end && refused && !refused.ok ? `${end} after BidiAppend ${refused.status} ${refused.code}: ${refused.message}` : end;
    return { first, frames: r.messages.length, ok: r.end?.ok === true, ...(failure ? { failure } : {}) };
  });
}

function benchClients(urls: readonly string[], authToken: string | undefined): CursorClient[] {
  // node:http, not fetch: undici's pool is slow with thousands of connections (transport.ts).
  const transport = nodeHttpTransport();
  return urls.map((u) => createCursorClient({ baseUrl: u, transport, ...(authToken ? { authToken } : {}) }));
}

/** A conversation a measured turn continues: its id and the final checkpoint of its last turn. */
export interface EarlierConversation {
  conversationId: string;
  state: ConversationStateStructure;
}

/**
 * The conversations `runTurns` continues (BENCH_CONVERSATION_TURNS; none when unset): `count`
 * conversations of that many one-delta turns each, built a round at a time, 20 turns in flight,
 * before the measured turns. A turn whose checkpoint was skipped (its blob acknowledgements late
 * on a loaded machine, GATEWAY_KV_ACK_TIMEOUT_MS) is run again.
 */
export async function earlierConversations(urls: readonly string[], count: number, authToken?: string): Promise<EarlierConversation[]> {
  const turns = CONVERSATION_TURNS;
  if (turns === 0) return [];
  const clients = benchClients(urls, authToken);
  const clientOf = (i: number) => clients[i % clients.length]!;
  const conversations = Array.from({ length: count }, () => ({ conversationId: `bench-conv-${randomUUID()}`, state: undefined as ConversationStateStructure | undefined }));
  const turn = async (i: number, round: number) => {
    const c = conversations[i]!;
    for (let attempt = 1; ; attempt++) {
      const tag = `bench-fixed-${randomUUID()}`;
      const r = await clientOf(i).runTurn({
        requestId: `${tag}-r`,
        message: runRequestMessage({ text: tag, conversationId: c.conversationId, modelId: MODEL, ...(c.state ? { conversationState: c.state } : {}) }),
      });
      if (r.end?.ok && r.lastCheckpoint) {
        c.state = r.lastCheckpoint;
        return;
      }
      if (attempt === 3) throw new Error(`building the conversations: turn ${round + 1} of ${c.conversationId} ended ${r.end === undefined ? "without an end" : r.end.ok ? "without a checkpoint" : r.end.code}, three times`);
    }
  };
  for (let round = 0; round < turns; round++) {
    let next = 0;
    await Promise.all(Array.from({ length: Math.min(20, count) }, async () => {
      while (next < count) await turn(next++, round);
    }));
  }
  return conversations.map((c) => ({ conversationId: c.conversationId, state: c.state! }));
}

/**
 * The direct-relay baseline: the same turns as `runTurns`, but the client posts a Chat
 * Completions request straight through a minimal Node relay (bench/src/relay.ts) to the
 * simulator and reads its SSE. TTFT overhead = first text event at the client − the
 * simulator's first text frame; frames = SSE events delivered.
 */
export async function relayTurns(bs: BenchSim, relayUrl: string, count: number, kind: TurnKind, rampMs = 0): Promise<TurnsResult> {
  const relayPost = nodeHttpTransport();
  return driveTurns(bs, count, kind, rampMs, async (_, tag) => {
    let first: number | undefined;
    let frames = 0;
    try {
      // The same HTTP client as the gateway's turns (node:http), so the two compare.
      const res = await relayPost(`${relayUrl}/v1/chat/completions`, {
        headers: { "content-type": "application/json", authorization: "Bearer sk-bench-not-a-real-key-0123456789" },
        body: new TextEncoder().encode(JSON.stringify({ model: "sim", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: tag }] })),
        stream: true,
      });
      let buf = "";
      const decoder = new TextDecoder();
      for await (const chunk of res.body) {
        buf += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          const event = buf.slice(0, end);
          buf = buf.slice(end + 2);
          if (!event.startsWith("data:")) continue;
          frames++;
          if (first === undefined && /"content":"[^"]/.test(event)) first = performance.now();
        }
      }
      const ok = res.status === 200;
      return { first, frames, ok, ...(ok ? {} : { failure: `http ${res.status}` }) };
    } catch (err) {
      return { first, frames, ok: false, failure: (err as Error).message };
    }
  });
}

/** `count` turns started evenly over `rampMs`, each driven by `one`; TTFT overhead against the simulator's clock. */
async function driveTurns(
  bs: BenchSim, count: number, kind: TurnKind, rampMs: number,
  one: (i: number, tag: string) => Promise<TurnOutcome>,
): Promise<TurnsResult> {
  const firstTextDelay = SCRIPTS[kind]!.chunkDelayMs ?? 0; // the role frame comes first, the first text one delay later
  const overheads: number[] = [];
  let frames = 0;
  let ok = 0;
  let live = 0;
  let peakConcurrent = 0;
  const failures: Record<string, number> = {};
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      if (rampMs > 0) await new Promise((r) => setTimeout(r, (i * rampMs) / count));
      const tag = `bench-${kind}-${randomUUID()}`;
      peakConcurrent = Math.max(peakConcurrent, ++live);
      // A turn that fails outright (e.g. a connection reset on an overloaded machine) counts as not ok.
      const r: TurnOutcome = await one(i, tag)
        .catch((err: unknown) => ({ first: undefined, frames: 0, ok: false, failure: (err as Error).message }))
        .finally(() => live--);
      frames += r.frames;
      if (r.ok) ok++;
      else failures[r.failure ?? "unknown"] = (failures[r.failure ?? "unknown"] ?? 0) + 1;
      const answered = bs.answeredAt.get(tag);
      if (r.first !== undefined && answered !== undefined) overheads.push(r.first - (answered + firstTextDelay));
    }),
  );
  return turnsResult(kind, { turns: count, peakConcurrent, ok, overheads, frames, seconds: (performance.now() - t0) / 1000, failures });
}

function turnsResult(kind: string, r: { turns: number; peakConcurrent: number; ok: number; overheads: number[]; frames: number; seconds: number; failures: Record<string, number> }): TurnsResult {
  return {
    failures: r.failures,
    turns: r.turns,
    peakConcurrent: r.peakConcurrent,
    ok: r.ok,
    ttftOverheadP50: round(percentile(r.overheads, 50)),
    ttftOverheadP99: round(percentile(r.overheads, 99)),
    frames: r.frames,
    seconds: round(r.seconds),
    framesPerSecond: Math.round(r.frames / r.seconds),
    deltasPerSecond: Math.round((r.ok * scriptDeltas(kind)) / r.seconds),
  };
}

export function scriptDeltas(kind: string): number {
  const t = SCRIPTS[kind]!.text;
  return Array.isArray(t) ? t.length : 0;
}

/** `n` turns one after another (no concurrency): the unloaded TTFT overhead. */
export async function sequentialTurns(bs: BenchSim, url: string, n: number, authToken?: string): Promise<TurnsResult> {
  const all: TurnsResult[] = [];
  for (let i = 0; i < n; i++) all.push(await runTurns(bs, [url], 1, "ttft", 0, authToken));
  const o = all.map((r) => r.ttftOverheadP50);
  const frames = all.reduce((a, r) => a + r.frames, 0);
  const seconds = all.reduce((a, r) => a + r.seconds, 0);
  const failures: Record<string, number> = {};
  for (const r of all) for (const [k, v] of Object.entries(r.failures)) failures[k] = (failures[k] ?? 0) + v;
  return {
    failures,
    turns: n,
    peakConcurrent: 1,
    ok: all.reduce((a, r) => a + r.ok, 0),
    ttftOverheadP50: round(percentile(o, 50)),
    ttftOverheadP99: round(percentile(o, 99)),
    frames,
    seconds: round(seconds),
    framesPerSecond: Math.round(frames / seconds),
    deltasPerSecond: Math.round(all.reduce((a, r) => a + r.deltasPerSecond * r.seconds, 0) / seconds),
  };
}

export interface IdleResult {
  streams: number;
  heapBeforeMiB: number;
  heapAfterMiB: number;
  heapPerStreamKiB: number;
  rssPerStreamKiB: number;
  redisConnectionsBefore?: number;
  redisConnectionsAfter?: number;
}

/**
 * Opens `n` idle RunSSE streams on one gateway process: requests that do not exist yet, held
 * by a raised not-found wait (GATEWAY_NOT_FOUND_WAIT_MS) and a long heartbeat. Heap and RSS from
 * the process's /metrics (nodejs default metrics), before and after.
 */
export async function idleStreams(target: Proc, n: number, redis?: Redis, authToken?: string): Promise<IdleResult> {
  const conns = async () =>
    redis ? String(await redis.client("LIST")).split("\n").filter((l) => l.includes(` name=${target.name}:`)).length : undefined;
  const heap = () => metric(target.url, "byok_nodejs_heap_size_used_bytes");
  const rss = () => metric(target.url, "byok_process_resident_memory_bytes");
  await new Promise((r) => setTimeout(r, 1_000));
  const [heapBefore, rssBefore, connsBefore] = [await heap(), await rss(), await conns()];
  const held: ClientRequest[] = [];
  try {
    for (let i = 0; i < n; i++) {
      held.push(holdIdleRunSse(target.url, `bench-idle-${i}-${randomUUID()}`, authToken ? { authToken } : {}));
      if (i % 500 === 499) await waitFor(async () => (await metric(target.url, "byok_run_sse_open")) >= i + 1 - 50, 60_000, "streams opening");
    }
    await waitFor(async () => (await metric(target.url, "byok_run_sse_open")) >= n, 120_000, `${n} streams open`);
    await new Promise((r) => setTimeout(r, 3_000));
    const [heapAfter, rssAfter, connsAfter] = [await heap(), await rss(), await conns()];
    return {
      streams: n,
      heapBeforeMiB: round(heapBefore / 2 ** 20),
      heapAfterMiB: round(heapAfter / 2 ** 20),
      heapPerStreamKiB: round((heapAfter - heapBefore) / n / 1024),
      rssPerStreamKiB: round((rssAfter - rssBefore) / n / 1024),
      ...(connsBefore !== undefined ? { redisConnectionsBefore: connsBefore } : {}),
      ...(connsAfter !== undefined ? { redisConnectionsAfter: connsAfter } : {}),
    };
  } finally {
    for (const req of held) req.destroy();
    await waitFor(async () => (await metric(target.url, "byok_run_sse_open")) === 0, 60_000, "streams closed");
  }
}

export interface TakeoverResult {
  /** kill -9 → server notice at the client (ms), per trial. */
  noticeMs: number[];
  /** kill -9 → first text of the new attempt at the client (ms), per trial. */
  resumedMs: number[];
}

/**
 * Kill -9 of the worker running a slow turn, `trials` times; `respawn` replaces the killed one.
 * Takeover time = kill → the new owner's notice reaches the client.
 */
export async function takeover(
  ingressUrl: string,
  workers: Proc[],
  respawn: () => Promise<Proc>,
  redis: Redis,
  queue: { name: string; prefix: string },
  trials: number,
  authToken?: string,
): Promise<TakeoverResult> {
  const q = new Queue(queue.name, { connection: redis.duplicate(), prefix: queue.prefix });
  const res: TakeoverResult = { noticeMs: [], resumedMs: [] };
  try {
    for (let t = 0; t < trials; t++) {
      const tag = `bench-slow-${randomUUID()}`;
      const ref = { tenantId: "default", requestId: `${tag}-r` };
      const client = createCursorClient({ baseUrl: ingressUrl, transport: nodeHttpTransport(), ...(authToken ? { authToken } : {}) });
      let killedAt: number | undefined;
      let notice: number | undefined;
      let resumed: number | undefined;
      let respawned: Promise<void> | undefined;
      await client.runTurn({
        requestId: ref.requestId,
        message: runRequestMessage({ text: tag, conversationId: `${tag}-c`, modelId: MODEL }),
        onMessage: async (m) => {
          if (m.message.case !== "interactionUpdate" || m.message.value.message.case !== "textDelta") return;
          const d = m.message.value.message.value;
          if (killedAt === undefined) {
            const owner = await waitFor(async () => (await q.getJob(runJobId(ref, 1)))?.processedBy, 10_000, "job owner");
            const victim = workers.find((w) => w.name === owner);
            if (!victim) throw new Error(`unknown owner ${owner}`);
            killedAt = performance.now();
            await victim.kill("SIGKILL");
            workers.splice(workers.indexOf(victim), 1);
            // Started, not awaited: the client reads on (and stamps the notice) while it boots.
            respawned = respawn().then((p) => void workers.push(p));
          } else if (d.isServerNotice && notice === undefined) notice = performance.now();
          else if (notice !== undefined && resumed === undefined) resumed = performance.now();
        },
      });
      await respawned;
      if (killedAt !== undefined && notice !== undefined) res.noticeMs.push(Math.round(notice - killedAt));
      if (killedAt !== undefined && resumed !== undefined) res.resumedMs.push(Math.round(resumed - killedAt));
    }
  } finally {
    await q.close();
  }
  return res;
}

/**
 * INFO commandstats as command → calls. Redis counts the commands a Lua script runs with
 * redis.call as well as the EVALSHA itself.
 */
export async function redisCommandCalls(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info("commandstats");
  const out = new Map<string, number>();
  for (const m of info.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) out.set(m[1]!, Number(m[2]));
  return out;
}

/** Per-command call deltas between two INFO snapshots (largest first) and their total. */
export function callDelta(before: Map<string, number>, after: Map<string, number>): { total: number; byCommand: Record<string, number> } {
  const delta: [string, number][] = [];
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d > 0) delta.push([k, d]);
  }
  delta.sort((a, b) => b[1] - a[1]);
  return { total: delta.reduce((n, [, d]) => n + d, 0), byCommand: Object.fromEntries(delta) };
}
