import type { Redis } from "ioredis";
import type { Unsubscribe } from "../types.js";

export type WakeKind = "input" | "output";

interface ChannelListeners {
  input: Set<() => void>;
  output: Set<() => void>;
}

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
    for (const fn of [...l.output, ...l.input]) call(fn);
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
    const set = message === "i" ? l.input : l.output;
    for (const fn of [...set]) call(fn);
  });
  // First connection and every reconnect: (re)subscribe every channel with listeners.
  sub.on("ready", () => subscribe([...byChannel.keys()]));

  return {
    listen(channel, kind, fn) {
      let l = byChannel.get(channel);
      const fresh = !l;
      if (!l) byChannel.set(channel, (l = { input: new Set(), output: new Set() }));
      const set = kind === "input" ? l.input : l.output;
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
        if (listeners.input.size + listeners.output.size > 0 || byChannel.get(channel) !== listeners) return;
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
