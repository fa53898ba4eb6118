import type { Redis } from "ioredis";
import type { CarriedOutput, Unsubscribe } from "../types.js";
import { decodeCarried } from "./codec.js";

/**
 * What a wake-up is about, by its message: "i" input delivered, "r" the last reader left,
 * "c" a conversation's run mark or prewarm changed (on a conversation's channel); anything
 * else ("o") output, end or a new generation.
 */
export type WakeKind = "input" | "output" | "readers" | "conversation";

const KIND_OF_MESSAGE: Record<string, WakeKind> = { i: "input", r: "readers", c: "conversation" };

type Listener = (carried?: CarriedOutput) => void;
/** A kind's set is made on its first listener: most channels only ever have one kind (a RunSSE stream's output). */
type ChannelListeners = Partial<Record<WakeKind, Set<Listener>>>;

const listenerCount = (l: ChannelListeners): number => (l.input?.size ?? 0) + (l.output?.size ?? 0) + (l.readers?.size ?? 0) + (l.conversation?.size ?? 0);

/**
 * Multiplexes every watch()/watchInput() of one bus instance over ONE subscriber connection
 * (docs/architecture.md property 6): one SSUBSCRIBE per request channel with local listeners,
 * reference-counted (SUNSUBSCRIBE when the last local listener leaves).
 *
 * Request and conversation channels are shard channels (SPUBLISH / SSUBSCRIBE, Redis >= 7.0):
 * on Redis Cluster a message goes to the node that owns the channel's slot (the request's hash
 * tag) instead of being broadcast to every node, and the "subscriber" is one connection per
 * master with subscribed channels (ioredis's sharded subscriber group). The bus's one starts
 * channel is a classic channel on a cluster only (one message per generation start, published
 * inside the append-input script, whose keys are in another slot; ioredis keeps classic and
 * shard subscriptions of a cluster on separate connections). On a standalone server it is a
 * shard channel too: there one connection holds every subscription, and ioredis leaves
 * subscriber mode as soon as an (S)UNSUBSCRIBE reply counts 0 — which Redis 7.0 counts per
 * kind — so one classic channel beside shard channels would be dropped from subscriber mode
 * (its messages then misread as replies) the moment the last shard channel is unsubscribed
 * (ioredis 6.0.0; redis/ioredis pull request #2196 proposes the fix).
 *
 * Wake-ups carry nothing but a lone appended frame ("O…", decodeCarried); readers re-read
 * after the others. Two moments wake every listener of a
 * channel without a message, so no write can fall between a reader's read and its
 * subscription: when the SSUBSCRIBE is confirmed, and after a reconnect (messages published
 * while the connection was down are lost, the streams are not). On a cluster each master's
 * subscriber reconnects on its own and ioredis re-subscribes its channels without a reply to
 * wait for, so after its "subscribersReady" every channel is subscribed again here and woken
 * on that confirmation (the same connection answers ioredis's re-subscription first).
 * A listener added to a channel whose subscription is already confirmed is called once in a
 * microtask instead: every listener is called once when its watch is live (the Bus contract),
 * so its owner needs no check of its own after registering.
 */
export interface Wakeups {
  listen(channel: string, kind: WakeKind, fn: Listener): Unsubscribe;
  /**
   * Listens for the start of a generation of the request whose hash tag is `tag`, over the
   * bus's one starts channel (its messages are the tags of requests whose generation started):
   * no SUBSCRIBE, channel name or ioredis entry per request, only a local map entry. For
   * readers that wait for a request to appear, which may be tens of thousands per process.
   */
  listenStart(tag: string, fn: () => void): Unsubscribe;
  /** The command the append-input script publishes a start with: PUBLISH on a cluster, else SPUBLISH. */
  readonly startsPublish: "PUBLISH" | "SPUBLISH";
  /** Channels with local listeners (tests, metrics). */
  channels(): number;
  close(): void;
}

export function createWakeups(sub: Redis, onError: (err: Error) => void, startsChannel: string): Wakeups {
  const byChannel = new Map<string, ChannelListeners>();
  /** Start listeners by request tag: the function itself while there is one (the usual case), an array past it. */
  const starts = new Map<string, (() => void) | (() => void)[]>();
  /** Whether the starts channel was subscribed: from the first start listener on, for the life of the bus. */
  let startsWanted = false;
  let closed = false;
  const startsSharded = !sub.isCluster;
  /** Channels whose subscription is confirmed on the current connection(s): a listener added to one is live at once. */
  const live = new Set<string>();

  const call = (fn: Listener, carried?: CarriedOutput) => {
    try {
      fn(carried);
    } catch (err) {
      onError(err instanceof Error ? err : new Error(String(err)));
    }
  };
  const wakeStarts = (fns: (() => void) | (() => void)[] | undefined) => {
    if (typeof fns === "function") call(fns);
    else if (fns) for (const fn of [...fns]) call(fn);
  };
  const wakeAll = (channel: string) => {
    // Confirmed (first time or after a reconnect): every waiting reader looks again.
    if (channel === startsChannel) for (const fns of [...starts.values()]) wakeStarts(fns);
    const l = byChannel.get(channel);
    if (!l) return;
    for (const fn of [...(l.output ?? []), ...(l.input ?? []), ...(l.readers ?? []), ...(l.conversation ?? [])]) call(fn);
  };

  const failed = (err: unknown) => {
    // Not connected: the "ready" / "subscribersReady" handlers subscribe every live channel again.
    if (sub.status === "ready") onError(err instanceof Error ? err : new Error(String(err)));
  };
  /** Shard channels; on a cluster one command per channel (each request has its own slot). */
  const subscribe = (channels: string[]) => {
    if (channels.length === 0 || closed) return;
    const confirmed = (batch: string[]) => () => {
      for (const c of batch) {
        if (byChannel.has(c)) live.add(c);
        wakeAll(c);
      }
    };
    if (sub.isCluster) for (const c of channels) sub.ssubscribe(c).then(confirmed([c]), failed);
    else sub.ssubscribe(...channels).then(confirmed(channels), failed);
  };
  const subscribeStarts = () => {
    if (closed) return;
    (startsSharded ? sub.ssubscribe(startsChannel) : sub.subscribe(startsChannel)).then(() => wakeAll(startsChannel), failed);
  };

  sub.on("smessageBuffer", (channelBytes: Buffer, message: Buffer) => {
    const channel = channelBytes.toString("utf8");
    if (channel === startsChannel) return wakeStarts(starts.get(message.toString("utf8")));
    const l = byChannel.get(channel);
    if (!l) return;
    // "O…": an output wake-up carrying the frame it announces.
    const carried = decodeCarried(message);
    const set = l[carried ? "output" : (KIND_OF_MESSAGE[message.toString("latin1")] ?? "output")];
    if (set) for (const fn of [...set]) call(fn, carried);
  });
  sub.on("messageBuffer", (channelBytes: Buffer, message: Buffer) => {
    if (channelBytes.toString("utf8") === startsChannel) wakeStarts(starts.get(message.toString("utf8")));
  });
  // A lost connection took every subscription with it: nothing is live until confirmed again.
  sub.on("close", () => live.clear());
  // First connection and every reconnect: (re)subscribe every channel with listeners.
  sub.on("ready", () => {
    subscribe([...byChannel.keys()]);
    if (startsWanted) subscribeStarts();
  });
  // A cluster's per-master subscribers came back (ioredis re-sent their channels unconfirmed).
  sub.on("subscribersReady", () => {
    live.clear();
    subscribe([...byChannel.keys()]);
  });

  return {
    startsPublish: startsSharded ? "SPUBLISH" : "PUBLISH",
    listen(channel, kind, fn) {
      let l = byChannel.get(channel);
      const fresh = !l;
      if (!l) byChannel.set(channel, (l = {}));
      const set = (l[kind] ??= new Set());
      // One registration per call even if the same function is passed twice.
      const entry: Listener = (carried) => fn(carried);
      set.add(entry);
      if (fresh && sub.status === "ready") subscribe([channel]);
      // Live already: called once now, as the confirmation calls the listeners it finds.
      else if (live.has(channel)) queueMicrotask(() => set.has(entry) && call(entry));
      let done = false;
      const listeners = l;
      return () => {
        if (done) return;
        done = true;
        set.delete(entry);
        if (listenerCount(listeners) > 0 || byChannel.get(channel) !== listeners) return;
        byChannel.delete(channel);
        live.delete(channel);
        if (sub.status === "ready" && !closed) sub.sunsubscribe(channel).catch(() => undefined);
      };
    },
    listenStart(tag, fn) {
      const present = starts.get(tag);
      // One registration per call even if the same function is passed twice.
      starts.set(tag, present === undefined ? fn : typeof present === "function" ? [present, fn] : [...present, fn]);
      if (!startsWanted) {
        startsWanted = true;
        if (sub.status === "ready") subscribeStarts();
      }
      let done = false;
      return () => {
        if (done) return;
        done = true;
        const now = starts.get(tag);
        if (now === fn) starts.delete(tag);
        else if (Array.isArray(now)) {
          const rest = now.filter((f, i) => f !== fn || i !== now.indexOf(fn));
          if (rest.length === 1) starts.set(tag, rest[0]!);
          else if (rest.length === 0) starts.delete(tag);
          else starts.set(tag, rest);
        }
      };
    },
    channels: () => byChannel.size,
    close() {
      closed = true;
      byChannel.clear();
      starts.clear();
    },
  };
}
