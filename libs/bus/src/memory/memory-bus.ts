import { GenerationGoneError } from "../errors.js";
import { decodeEntryMeta, encodeEntryMeta, type EntryMeta } from "../entry-meta.js";
import type {
  AppendOutcome, Bus, BusOptions, Claim, EndStatus, GenerationInfo, InputEntry, OutputAppendResult,
  OutputEntry, OutputRead, RequestRef, Unsubscribe,
} from "../types.js";

interface GenerationState {
  input: InputEntry[];
  output: OutputEntry[];
  end: EndStatus | undefined;
  epoch: number;
  snapshot: Uint8Array | undefined;
  /** Next expected append_seqno of this generation. */
  nextSeqno: bigint;
  /** Appends received ahead of a gap, by seqno. */
  buffered: Map<bigint, { payload: Uint8Array; meta: EntryMeta }>;
  /** Retention passed: content dropped, the generation reads as absent; sequence state kept. */
  expired: boolean;
}

interface RequestState {
  latest: number;
  generations: Map<number, GenerationState>;
  readers: Set<string>;
  lastLeftAt: number | undefined;
  touchedAt: number;
}

function keyOf(ref: RequestRef): string {
  return `${ref.tenantId}\u0000${ref.requestId}`;
}

function newGeneration(): GenerationState {
  return { input: [], output: [], end: undefined, epoch: 0, snapshot: undefined, nextSeqno: 1n, buffered: new Map(), expired: false };
}

/**
 * In-memory bus for embedded mode: one process, same guarantees as the Redis bus within it.
 * Every method completes synchronously under the hood, so each is trivially atomic.
 */
export function createMemoryBus(opts: BusOptions): Bus {
  const requests = new Map<string, RequestState>();
  const outputWatchers = new Map<string, Set<() => void>>();
  const startWatchers = new Map<string, Set<() => void>>();
  const inputWatchers = new Map<string, Set<() => void>>();
  const readerWatchers = new Map<string, Set<() => void>>();
  const conversationWatchers = new Map<string, Set<() => void>>();
  const timers = new Set<NodeJS.Timeout>();
  const conversationRuns = new Map<string, { runKey: string; expiresAt: number }>();
  const prewarms = new Map<string, { data: Uint8Array; expiresAt: number }>();
  const livePrewarm = (k: string) => {
    const p = prewarms.get(k);
    if (p && p.expiresAt <= Date.now()) prewarms.delete(k);
    return prewarms.get(k);
  };

  const notify = (map: Map<string, Set<() => void>>, key: string) => {
    const set = map.get(key);
    if (!set) return;
    for (const fn of [...set]) queueMicrotask(fn);
  };

  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    t.unref();
    timers.add(t);
  };

  // Idle sequence state is dropped (docs/protocol.md: about 10 minutes); live generations are kept.
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [k, r] of requests) {
      const g = r.generations.get(r.latest);
      const live = g && !g.end;
      if (!live && r.readers.size === 0 && now - r.touchedAt > opts.sequenceStateTtlMs) requests.delete(k);
    }
  }, Math.min(opts.sequenceStateTtlMs, 60_000));
  sweep.unref();

  /** `live`: call `fn` once now that the watch is live (the Bus contract of watch, watchInput, watchReaders, watchConversation). */
  const watchIn = (map: Map<string, Set<() => void>>, k: string, fn: () => void, live = true): Unsubscribe => {
    let set = map.get(k);
    if (!set) map.set(k, (set = new Set()));
    set.add(fn);
    if (live) queueMicrotask(() => set.has(fn) && fn());
    return () => {
      set.delete(fn);
      if (set.size === 0) map.delete(k);
    };
  };

  const gen = (ref: RequestRef, generation: number): GenerationState | undefined =>
    requests.get(keyOf(ref))?.generations.get(generation);

  return {
    async appendInput(ref, seqno, payload, given): Promise<AppendOutcome> {
      // Stored as the Redis bus stores it, so both read back the same metadata.
      const meta = decodeEntryMeta(encodeEntryMeta(given));
      const k = keyOf(ref);
      let r = requests.get(k);
      if (!r) {
        r = { latest: 0, generations: new Map(), readers: new Set(), lastLeftAt: undefined, touchedAt: Date.now() };
        requests.set(k, r);
      }
      r.touchedAt = Date.now();
      let g = r.generations.get(r.latest);
      const latestEnded = !g || g.end !== undefined;
      if (latestEnded && (seqno === 1n || seqno <= 0n)) {
        r.latest += 1;
        g = newGeneration();
        r.generations.set(r.latest, g);
      }
      if (!g) {
        // No generation yet and the first append is not seqno 1: buffer it in a fresh generation
        // that starts once seqno 1 arrives.
        r.latest += 1;
        g = newGeneration();
        r.generations.set(r.latest, g);
      }
      const generation = r.latest;
      // A generation starts (and is dispatched) with its first delivered input entry.
      const started = g.input.length === 0;
      // Readers waiting for the request (or for a newer generation) learn about it.
      if (started) {
        queueMicrotask(() => notify(outputWatchers, k));
        queueMicrotask(() => notify(startWatchers, k));
      }
      if (seqno <= 0n) {
        if (g.input.length >= opts.maxInputEntries) return { status: "input_full", generation, limit: opts.maxInputEntries };
        g.input.push({ index: g.input.length, seqno, payload, meta });
        notify(inputWatchers, k);
        return { status: "accepted", generation, startedGeneration: started };
      }
      if (seqno < g.nextSeqno || g.buffered.has(seqno)) return { status: "duplicate", generation };
      if (seqno - g.nextSeqno > BigInt(opts.seqnoWindow)) {
        return { status: "beyond_window", generation, nextSeqno: g.nextSeqno, window: opts.seqnoWindow };
      }
      if (seqno > g.nextSeqno) {
        if (g.input.length + g.buffered.size >= opts.maxInputEntries) return { status: "input_full", generation, limit: opts.maxInputEntries };
        g.buffered.set(seqno, { payload, meta });
        return { status: "buffered", generation };
      }
      if (g.input.length >= opts.maxInputEntries) return { status: "input_full", generation, limit: opts.maxInputEntries };
      g.input.push({ index: g.input.length, seqno, payload, meta });
      g.nextSeqno += 1n;
      for (let next = g.buffered.get(g.nextSeqno); next; next = g.buffered.get(g.nextSeqno)) {
        g.buffered.delete(g.nextSeqno);
        g.input.push({ index: g.input.length, seqno: g.nextSeqno, payload: next.payload, meta: next.meta });
        g.nextSeqno += 1n;
      }
      notify(inputWatchers, k);
      return { status: "accepted", generation, startedGeneration: started };
    },

    async latestGeneration(ref): Promise<GenerationInfo | undefined> {
      const r = requests.get(keyOf(ref));
      if (!r || r.latest === 0) return undefined;
      const g = r.generations.get(r.latest);
      if (!g || g.expired) return undefined;
      return { generation: r.latest, ended: g.end !== undefined };
    },

    async readOutput(ref, generation, fromIndex, max): Promise<OutputRead> {
      const g = gen(ref, generation);
      if (!g || g.expired) return { entries: [] };
      const entries = g.output.slice(fromIndex, fromIndex + max);
      const done = fromIndex + entries.length >= g.output.length;
      return done && g.end ? { entries, end: g.end } : { entries };
    },

    watch(ref, onChange) {
      return watchIn(outputWatchers, keyOf(ref), onChange);
    },

    watchStart(ref, onStart) {
      return watchIn(startWatchers, keyOf(ref), onStart, false);
    },

    async addReader(ref, readerId) {
      const k = keyOf(ref);
      let r = requests.get(k);
      if (!r) {
        r = { latest: 0, generations: new Map(), readers: new Set(), lastLeftAt: undefined, touchedAt: Date.now() };
        requests.set(k, r);
      }
      r.readers.add(readerId);
      const state = r;
      return async () => {
        if (state.readers.delete(readerId) && state.readers.size === 0) {
          state.lastLeftAt = Date.now();
          notify(readerWatchers, k);
        }
      };
    },

    async claim(ref, generation): Promise<Claim> {
      const g = gen(ref, generation);
      if (!g) throw new GenerationGoneError(generation, "missing");
      g.epoch += 1;
      const ended = g.end !== undefined;
      // An empty snapshot reads as none, as the Redis bus's claim returns it.
      return { epoch: g.epoch, ended, snapshot: ended || !g.snapshot?.byteLength ? undefined : g.snapshot };
    },

    async readInput(ref, generation, fromIndex) {
      return gen(ref, generation)?.input.slice(fromIndex) ?? [];
    },

    watchInput(ref, onChange) {
      return watchIn(inputWatchers, keyOf(ref), onChange);
    },

    async appendOutput(ref, generation, epoch, frames, trace, snapshot): Promise<OutputAppendResult> {
      if (snapshot?.byteLength === 0) throw new Error("appendOutput: an empty snapshot cannot be saved");
      const g = gen(ref, generation);
      if (!g || g.epoch !== epoch) return { ok: false, reason: "fenced" };
      if (g.end) return { ok: false, reason: "ended" };
      if (g.output.length + frames.length > opts.maxOutputFrames) return { ok: false, reason: "cap", limit: opts.maxOutputFrames };
      const appendedAt = Date.now();
      for (const frame of frames) g.output.push({ index: g.output.length, frame, trace, appendedAt });
      if (snapshot) g.snapshot = snapshot;
      notify(outputWatchers, keyOf(ref));
      return { ok: true, nextIndex: g.output.length };
    },

    async endOutput(ref, generation, epoch, end): Promise<OutputAppendResult> {
      const g = gen(ref, generation);
      if (!g || g.epoch !== epoch) return { ok: false, reason: "fenced" };
      if (g.end) return { ok: false, reason: "ended" };
      g.end = end;
      const k = keyOf(ref);
      notify(outputWatchers, k);
      later(opts.finishedRetentionMs, () => {
        const r = requests.get(k);
        // Keep the latest generation's sequence state (for duplicates and reuse); drop its content.
        if (r && r.latest !== generation) r.generations.delete(generation);
        else if (r) {
          g.expired = true;
          g.output = [];
          g.input = [];
          g.snapshot = undefined;
        }
      });
      return { ok: true, nextIndex: g.output.length };
    },

    async readerPresence(ref) {
      const r = requests.get(keyOf(ref));
      const readers = r?.readers.size ?? 0;
      return { readers, lastLeftAt: readers > 0 ? undefined : r?.lastLeftAt };
    },

    watchReaders(ref, onChange) {
      return watchIn(readerWatchers, keyOf(ref), onChange);
    },

    async markConversationRun(tenantId, conversationId, runKey, ttlMs) {
      const k = `${tenantId}\u0000${conversationId}`;
      conversationRuns.set(k, { runKey, expiresAt: Date.now() + ttlMs });
      notify(conversationWatchers, k);
    },

    watchConversation(tenantId, conversationId, onChange) {
      return watchIn(conversationWatchers, `${tenantId}\u0000${conversationId}`, onChange);
    },

    async conversationRun(tenantId, conversationId) {
      const k = `${tenantId}\u0000${conversationId}`;
      const m = conversationRuns.get(k);
      if (!m) return undefined;
      if (m.expiresAt <= Date.now()) {
        conversationRuns.delete(k);
        return undefined;
      }
      return m.runKey;
    },

    async savePrewarm(tenantId, conversationId, data, ttlMs) {
      prewarms.set(`${tenantId}\u0000${conversationId}`, { data, expiresAt: Date.now() + ttlMs });
    },

    async takePrewarm(tenantId, conversationId) {
      const k = `${tenantId}\u0000${conversationId}`;
      const p = livePrewarm(k);
      prewarms.delete(k);
      if (p) notify(conversationWatchers, k);
      return p?.data;
    },

    async hasPrewarm(tenantId, conversationId) {
      return livePrewarm(`${tenantId}\u0000${conversationId}`) !== undefined;
    },

    async saveSnapshot(ref, generation, epoch, snapshot) {
      const g = gen(ref, generation);
      if (!g || g.epoch !== epoch) return false;
      g.snapshot = snapshot;
      return true;
    },

    async loadSnapshot(ref, generation) {
      return gen(ref, generation)?.snapshot;
    },

    async close() {
      clearInterval(sweep);
      for (const t of timers) clearTimeout(t);
      timers.clear();
      requests.clear();
      conversationRuns.clear();
      prewarms.clear();
      outputWatchers.clear();
      inputWatchers.clear();
      readerWatchers.clear();
      conversationWatchers.clear();
    },
  };
}
