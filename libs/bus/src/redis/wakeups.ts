import type { Redis } from "ioredis";
import type { Unsubscribe } from "../types.js";

/**
 * What a wake-up is about, by its message: "i" input delivered, "r" the last reader left,
 * "c" a conversation's run mark or prewarm changed (on a conversation's channel); anything
 * else ("o") output, end or a new generation.
 */
export type WakeKind = "input" | "output" | "readers" | "conversation";

const KIND_OF_MESSAGE: Record<string, WakeKind> = { i: "input", r: "readers", c: "conversation" };

type ChannelListeners = Record<WakeKind, Set<() => void>>;

const noListeners = (): ChannelListeners => ({ input: new Set(), output: new Set(), readers: new Set(), conversation: new Set() });
const listenerCount = (l: ChannelListeners): number => l.input.size + l.output.size + l.readers.size + l.conversation.size;

/**
 * Multiplexes every watch()/watchInput() of one bus instance over ONE subscriber connection
 * (docs/architecture.md property 6): one SUBSCRIBE per request channel with local listeners,
 * reference-counted (UNSUBSCRIBE when the last local listener leaves).
 *
 * Wake-ups carry nothing; readers re-read after each one. Two moments wake every listener of a
 * channel without a message, so no write can fall between a reader's read and its
 * subscription: when the SUBSCRIBE is confirmed, and after a reconnect (messages published
 * while the connection was down are lost, the streams are not).
 */
export interface Wakeups {
  listen(channel: string, kind: WakeKind, fn: () => void): Unsubscribe;
  /** Channels with local listeners (tests, metrics). */
  channels(): number;
  close(): void;
}

export function createWakeups(sub: Redis, onError: (err: Error) => void): Wakeups {
  const byChannel = new Map<string, ChannelListeners>();
  let closed = false;

  const call = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      onError(err instanceof Error ? err : new Error(String(err)));
    }
  };
  const wakeAll = (channel: string) => {
    const l = byChannel.get(channel);
    if (!l) return;
    for (const fn of [...l.output, ...l.input, ...l.readers, ...l.conversation]) call(fn);
  };

  const subscribe = (channels: string[]) => {
    if (channels.length === 0 || closed) return;
    sub.subscribe(...channels).then(
      () => {
        for (const c of channels) wakeAll(c);
      },
      // Not connected: the "ready" handler subscribes every live channel again.
      (err: unknown) => {
        if (sub.status === "ready") onError(err instanceof Error ? err : new Error(String(err)));
      },
    );
  };

  sub.on("message", (channel: string, message: string) => {
    const l = byChannel.get(channel);
    if (!l) return;
    const set = l[KIND_OF_MESSAGE[message] ?? "output"];
    for (const fn of [...set]) call(fn);
  });
  // First connection and every reconnect: (re)subscribe every channel with listeners.
  sub.on("ready", () => subscribe([...byChannel.keys()]));

  return {
    listen(channel, kind, fn) {
      let l = byChannel.get(channel);
      const fresh = !l;
      if (!l) byChannel.set(channel, (l = noListeners()));
      const set = l[kind];
      // One registration per call even if the same function is passed twice.
      const entry = () => fn();
      set.add(entry);
      if (fresh && sub.status === "ready") subscribe([channel]);
      let done = false;
      const listeners = l;
      return () => {
        if (done) return;
        done = true;
        set.delete(entry);
        if (listenerCount(listeners) > 0 || byChannel.get(channel) !== listeners) return;
        byChannel.delete(channel);
        if (sub.status === "ready" && !closed) sub.unsubscribe(channel).catch(() => undefined);
      };
    },
    channels: () => byChannel.size,
    close() {
      closed = true;
      byChannel.clear();
    },
  };
}
