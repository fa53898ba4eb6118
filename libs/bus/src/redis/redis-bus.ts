import { GenerationGoneError } from "../errors.js";
import { randomUUID } from "node:crypto";
import { assertKeyPrefix, defineScripts, hashTag, isDisconnected, openConnection, runScript, type RedisTarget } from "@byok/redis";
import type { Redis } from "ioredis";
import type {
  AppendOutcome, Bus, BusOptions, EndStatus, GenerationInfo, InputEntry, OutputAppendResult, OutputEntry, OutputRead, RequestRef,
} from "../types.js";
import { encodeEntryMeta } from "../entry-meta.js";
import {
  encodeCarried, encodeTrace, inputIdOfIndex, outputIdOf, outputStartOfIndex, toBuffer, toEndStatus, toInputEntry, toOutputItem, type StreamEntry,
} from "./codec.js";
import { BusUnavailableError, toBusError } from "./unavailable.js";
import { conversationChannel, conversationPrewarmKey, conversationRunKey, requestKeys, startsChannel } from "./keys.js";
import {
  ALL_SCRIPTS, appendInputScript, appendOutputScript, claimScript, endOutputScript, latestGenerationScript,
  markConversationRunScript, readerAddScript, readerPresenceScript, readerRemoveScript, saveSnapshotScript, type FencedWriteReply,
} from "./script-specs.js";
import { createWakeups } from "./wakeups.js";

/** Frames up to this size ride in their wake-up (larger ones: readers read them, Redis sends them once). */
const MAX_CARRIED_FRAME_BYTES = 64 * 1024;

/** Redis refused an XADD for its id: at or below the stream's last id (fenced, ended, or a wrong index). */
function isIdRefusal(err: unknown): boolean {
  return err instanceof Error && err.name === "ReplyError" && /^ERR The (ID specified in XADD|stream has exhausted)/.test(err.message);
}

export interface RedisBusConfig {
  /** Connection options, a redis:// URL, or `{ cluster: [{ host, port }, …] }` for Redis Cluster. */
  redis: RedisTarget;
  /** Prefix of every key and channel (no braces). Tests use a unique one each. */
  keyPrefix: string;
  options: BusOptions;
  /**
   * Client name of this bus's connections (`<name>:cmd`, `<name>:sub` in CLIENT LIST).
   * Default: `byok-bus-<random>`. No spaces.
   */
  name?: string;
  /** A command without a reply fails after this long (default 5000 ms). */
  commandTimeoutMs?: number;
  /** Reconnect delay for the n-th attempt (default min(50·n, 1000) ms); reconnects never stop. */
  reconnectDelayMs?: (attempt: number) => number;
  /** Connection and listener errors (default: ignored; operations report theirs as errors). */
  onError?: (err: Error) => void;
}

/**
 * The Redis bus (distributed mode): same contract as the memory bus (types.ts), every request
 * under one hash tag, one Lua script per write, two connections per instance whatever the
 * number of open streams. Key layout and scripts: libs/bus/README.md.
 */
export function createRedisBus(config: RedisBusConfig): Bus {
  const { keyPrefix: prefix, options: opts } = config;
  assertKeyPrefix(prefix, "bus key prefix");
  if (!/^[!-~]+$/.test(config.name ?? "x")) throw new Error("bus name must be printable ASCII without spaces");
  const name = config.name ?? `byok-bus-${randomUUID().slice(0, 8)}`;
  const onError = config.onError ?? (() => undefined);
  const tuning = {
    commandTimeoutMs: config.commandTimeoutMs ?? 5_000,
    reconnectDelayMs: config.reconnectDelayMs ?? ((n: number) => Math.min(50 * n, 1_000)),
    onError,
  };
  const cmd: Redis = openConnection(config.redis, { ...tuning, name: `${name}:cmd` });
  const sub: Redis = openConnection(config.redis, { ...tuning, name: `${name}:sub`, subscriber: true });
  defineScripts(cmd, ALL_SCRIPTS);
  const starts = startsChannel(prefix);
  const wakeups = createWakeups(sub, onError, starts);
  const refreshTimers = new Set<NodeJS.Timeout>();
  /**
   * Next output index per (request, generation, epoch) this instance owns, from its claim and
   * its own appends: lets an append go out as one XADD whose id is the fence. Only values a
   * reply confirmed go in; any doubt (an error, a refusal, the end) removes the entry.
   */
  const nextIndex = new Map<string, number>();
  const MAX_OWNED = 100_000;
  const ownedKey = (base: string, generation: number, epoch: number) => `${base}\u0000${generation}\u0000${epoch}`;
  const own = (key: string, next: number | undefined) => {
    nextIndex.delete(key);
    if (next === undefined) return;
    if (nextIndex.size >= MAX_OWNED) nextIndex.delete(nextIndex.keys().next().value!);
    nextIndex.set(key, next);
  };
  // The seq hash must outlive the retained generation keys: a new generation 1 must never
  // meet the leftovers of an old one.
  const seqTtlMs = Math.max(opts.sequenceStateTtlMs, opts.finishedRetentionMs);
  let closed = false;

  const toOutputResult = (r: FencedWriteReply): OutputAppendResult => {
    if (r.ok) return { ok: true, nextIndex: r.nextIndex };
    if (r.reason === "cap") return { ok: false, reason: "cap", limit: opts.maxOutputFrames };
    return { ok: false, reason: r.reason };
  };

  /** Runs one Redis operation: fails fast while disconnected, maps failures to BusUnavailableError. */
  async function op<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (closed) throw new BusUnavailableError(`redis bus: ${what}: the bus is closed`);
    if (isDisconnected(cmd)) throw new BusUnavailableError(`redis bus: ${what}: not connected to Redis (${cmd.status})`);
    try {
      return await fn();
    } catch (err) {
      throw toBusError(err, what);
    }
  }

  return {
    appendInput(ref, seqno, payload, meta): Promise<AppendOutcome> {
      const k = requestKeys(prefix, ref);
      return op("appendInput", async (): Promise<AppendOutcome> => {
        const r = await runScript(cmd, appendInputScript, {
          keys: { seq: k.seq, base: k.base },
          args: {
            seqno: seqno.toString(),
            payload: toBuffer(payload),
            trace: encodeTrace(encodeEntryMeta(meta)),
            window: opts.seqnoWindow,
            maxInput: opts.maxInputEntries,
            seqTtlMs: seqTtlMs,
            retentionMs: opts.finishedRetentionMs,
            channel: k.channel,
            startsChannel: starts,
            tag: k.tag,
            startsPublish: wakeups.startsPublish,
          },
        });
        switch (r.status) {
          case "beyond_window":
            return { status: r.status, generation: r.generation, nextSeqno: r.nextSeqno, window: opts.seqnoWindow };
          case "input_full":
            return { status: r.status, generation: r.generation, limit: opts.maxInputEntries };
          case "accepted":
            return { status: r.status, generation: r.generation, startedGeneration: r.startedGeneration };
          case "buffered":
          case "duplicate":
            return { status: r.status, generation: r.generation };
        }
      });
    },

    latestGeneration(ref): Promise<GenerationInfo | undefined> {
      const k = requestKeys(prefix, ref);
      return op("latestGeneration", () => runScript(cmd, latestGenerationScript, { keys: { seq: k.seq, base: k.base }, args: {} }));
    },

    readOutput(ref, generation, fromIndex, max): Promise<OutputRead> {
      const g = requestKeys(prefix, ref).generation(generation);
      return op("readOutput", async () => {
        const from = Math.max(0, fromIndex);
        const limit = Math.max(1, max);
        // One XRANGE: the end marker (end-output.lua) follows the last frame, so a range that
        // reaches it holds both; one more than `max` so a full page right before it ends too.
        const range = (await cmd.xrangeBuffer(g.output, outputStartOfIndex(from), "+", "COUNT", limit + 1)) as StreamEntry[];
        if (range.length > 0) {
          const entries: OutputEntry[] = [];
          let end: EndStatus | undefined;
          for (const item of range.map(toOutputItem)) {
            if ("end" in item) end = item.end;
            else entries.push(item.entry);
          }
          if (end && entries.length <= max) return { entries, end };
          return { entries: entries.slice(0, Math.max(0, max)) };
        }
        // Nothing at or after `from`: up to date (the usual case: one more command), or a cursor
        // past the end. The end hash first: once it exists nothing is appended any more, so the
        // stream length read after it is final. A length beyond `from` means frames (and the
        // end) arrived after the XRANGE: the caller's next read, on their wake-up, gets them.
        const end = toEndStatus(await cmd.hgetallBuffer(g.end));
        if (!end) return { entries: [] };
        return (await cmd.xlen(g.output)) <= from ? { entries: [], end } : { entries: [] };
      });
    },

    watch(ref, onChange) {
      return wakeups.listen(requestKeys(prefix, ref).channel, "output", onChange);
    },

    watchStart(ref, onStart) {
      return wakeups.listenStart(hashTag(ref.tenantId, ref.requestId), onStart);
    },

    async addReader(ref, readerId, ttlMs) {
      const k = requestKeys(prefix, ref);
      const add = () =>
        runScript(cmd, readerAddScript, {
          keys: { readers: k.readers },
          args: { readerId, ttlMs, lingerMs: seqTtlMs },
        });
      await op("addReader", add);
      // Refresh well before the TTL passes; a failed refresh is retried on the next tick.
      const timer = setInterval(() => {
        if (!isDisconnected(cmd)) add().catch((err: unknown) => onError(toBusError(err, "addReader refresh")));
      }, Math.max(1, Math.floor(ttlMs / 3)));
      timer.unref();
      refreshTimers.add(timer);
      let left = false;
      return async () => {
        if (left) return;
        left = true;
        clearInterval(timer);
        refreshTimers.delete(timer);
        await op("removeReader", () =>
          runScript(cmd, readerRemoveScript, { keys: { readers: k.readers, left: k.left }, args: { readerId, lingerMs: seqTtlMs, channel: k.channel } }),
        );
      };
    },

    claim(ref, generation) {
      const k = requestKeys(prefix, ref);
      const g = k.generation(generation);
      return op("claim", async () => {
        const r = await runScript(cmd, claimScript, { keys: { seq: k.seq, epoch: g.epoch, end: g.end, output: g.output, snapshot: g.snapshot }, args: { generation } });
        if (!r.ok) throw new GenerationGoneError(generation, r.reason);
        own(ownedKey(k.base, generation, r.epoch), r.nextIndex);
        return { epoch: r.epoch, ended: r.nextIndex === undefined, snapshot: r.snapshot };
      });
    },

    readInput(ref, generation, fromIndex): Promise<InputEntry[]> {
      const g = requestKeys(prefix, ref).generation(generation);
      return op("readInput", async () => {
        const raw = await cmd.xrangeBuffer(g.input, inputIdOfIndex(Math.max(0, fromIndex)), "+");
        return raw.map(toInputEntry);
      });
    },

    watchInput(ref, onChange) {
      return wakeups.listen(requestKeys(prefix, ref).channel, "input", onChange);
    },

    appendOutput(ref, generation, epoch, frames, trace, snapshot): Promise<OutputAppendResult> {
      const k = requestKeys(prefix, ref);
      const g = k.generation(generation);
      if (snapshot?.byteLength === 0) throw new Error("appendOutput: an empty snapshot cannot be saved");
      const owned = ownedKey(k.base, generation, epoch);
      return op("appendOutput", async () => {
        const known = nextIndex.get(owned);
        nextIndex.delete(owned); // back only once a reply confirms the new value
        const encodedTrace = encodeTrace(trace);
        const appendedAt = Date.now();
        const [frame] = frames;
        // A lone frame without a snapshot: one XADD whose id carries the epoch is the whole
        // fence (a stale owner's id is below the stream's last id, so Redis refuses it), then
        // the wake-up. Refused: the script tells why (or appends, if only the index was off).
        if (frames.length === 1 && frame && !snapshot && known !== undefined && known < opts.maxOutputFrames) {
          const added = await cmd.xadd(g.output, outputIdOf(known, epoch), "f", toBuffer(frame), "t", encodedTrace, "a", appendedAt).then(
            () => true,
            (err: unknown) => {
              if (isIdRefusal(err)) return false;
              throw err;
            },
          );
          if (added) {
            own(owned, known + 1);
            // The wake-up carries the frame: a reader that is up to date needs no XRANGE for it.
            await cmd.spublish(k.channel, frame.byteLength <= MAX_CARRIED_FRAME_BYTES ? encodeCarried(generation, known, appendedAt, encodedTrace, frame) : "o");
            return { ok: true as const, nextIndex: known + 1 };
          }
        }
        const r = await runScript(cmd, appendOutputScript, {
          keys: { seq: k.seq, epoch: g.epoch, end: g.end, output: g.output, snapshot: g.snapshot },
          args: {
            generation, epoch, maxOutput: opts.maxOutputFrames, channel: k.channel, trace: encodedTrace, appendedAt,
            snapshot: snapshot ? toBuffer(snapshot) : "", index: known ?? -1,
            carried:
              frames.length === 1 && frame && known !== undefined && frame.byteLength <= MAX_CARRIED_FRAME_BYTES
                ? encodeCarried(generation, known, appendedAt, encodedTrace, frame)
                : "",
          },
          rest: frames.map(toBuffer),
        });
        if (r.ok) own(owned, r.nextIndex);
        return toOutputResult(r);
      });
    },

    endOutput(ref, generation, epoch, end): Promise<OutputAppendResult> {
      const k = requestKeys(prefix, ref);
      const g = k.generation(generation);
      const present = `${end.code !== undefined ? "c" : ""}${end.message !== undefined ? "m" : ""}${end.errorDetails !== undefined ? "d" : ""}`;
      nextIndex.delete(ownedKey(k.base, generation, epoch));
      return op("endOutput", async () => {
        const r = await runScript(cmd, endOutputScript, {
          keys: { seq: k.seq, epoch: g.epoch, end: g.end, output: g.output, input: g.input, buffered: g.buffered, snapshot: g.snapshot },
          args: {
            generation,
            epoch,
            ok: end.ok ? "1" : "0",
            present,
            code: end.code ?? "",
            message: end.message ?? "",
            details: end.errorDetails ? toBuffer(end.errorDetails) : "",
            retentionMs: opts.finishedRetentionMs,
            seqTtlMs,
            channel: k.channel,
          },
        });
        return toOutputResult(r);
      });
    },

    readerPresence(ref) {
      const k = requestKeys(prefix, ref);
      return op("readerPresence", () => runScript(cmd, readerPresenceScript, { keys: { readers: k.readers, left: k.left }, args: {} }));
    },

    watchReaders(ref, onChange) {
      return wakeups.listen(requestKeys(prefix, ref).channel, "readers", onChange);
    },

    saveSnapshot(ref, generation, epoch, snapshot) {
      const k = requestKeys(prefix, ref);
      const g = k.generation(generation);
      return op("saveSnapshot", () =>
        runScript(cmd, saveSnapshotScript, {
          keys: { seq: k.seq, epoch: g.epoch, end: g.end, snapshot: g.snapshot },
          args: { generation, epoch, snapshot: toBuffer(snapshot) },
        }),
      );
    },

    markConversationRun(tenantId, conversationId, runKey, ttlMs) {
      const mark = conversationRunKey(prefix, tenantId, conversationId);
      const channel = conversationChannel(prefix, tenantId, conversationId);
      return op("markConversationRun", () =>
        runScript(cmd, markConversationRunScript, { keys: { mark }, args: { runKey, ttlMs: Math.max(1, Math.round(ttlMs)), channel } }),
      );
    },

    watchConversation(tenantId, conversationId, onChange) {
      return wakeups.listen(conversationChannel(prefix, tenantId, conversationId), "conversation", onChange);
    },

    conversationRun(tenantId, conversationId) {
      const key = conversationRunKey(prefix, tenantId, conversationId);
      return op("conversationRun", async () => (await cmd.get(key)) ?? undefined);
    },

    savePrewarm(tenantId, conversationId, data, ttlMs) {
      const key = conversationPrewarmKey(prefix, tenantId, conversationId);
      return op("savePrewarm", async () => {
        await cmd.set(key, toBuffer(data), "PX", Math.max(1, Math.round(ttlMs)));
      });
    },

    takePrewarm(tenantId, conversationId) {
      const key = conversationPrewarmKey(prefix, tenantId, conversationId);
      return op("takePrewarm", async () => {
        // GETDEL (Redis ≥ 6.2): two runs cannot both take the same prewarm. The prewarmed run
        // that shared it learns from the wake-up (a lost one: its next check finds it gone).
        const b = await cmd.getdelBuffer(key);
        if (!b) return undefined;
        await cmd.spublish(conversationChannel(prefix, tenantId, conversationId), "c");
        return new Uint8Array(b);
      });
    },

    hasPrewarm(tenantId, conversationId) {
      const key = conversationPrewarmKey(prefix, tenantId, conversationId);
      return op("hasPrewarm", async () => (await cmd.exists(key)) === 1);
    },

    loadSnapshot(ref, generation) {
      const g = requestKeys(prefix, ref).generation(generation);
      return op("loadSnapshot", async () => {
        const b = await cmd.getBuffer(g.snapshot);
        return b ? new Uint8Array(b) : undefined;
      });
    },

    async close() {
      if (closed) return;
      closed = true;
      for (const t of refreshTimers) clearInterval(t);
      refreshTimers.clear();
      nextIndex.clear();
      wakeups.close();
      await Promise.all([cmd, sub].map((c) => c.quit().catch(() => c.disconnect())));
    },
  };
}
