import { assertKeyPrefix, hashTag } from "@byok/redis";
import type { RequestRef } from "../types.js";

/**
 * Key layout of the Redis bus. Every key of one request (and its wake channel) carries the
 * hash tag `{<tenant>:<request>}`, so all of them live in one Redis Cluster slot and every
 * script runs in that slot (docs/architecture.md property 8). The tenant is part of the tag and
 * of every key: a request id is only ever looked up inside its tenant (property 9).
 *
 * Ids are escaped before they enter the tag (`hashTag` of @byok/redis), so an id can neither
 * end the tag early nor make two tenant/request pairs collide.
 */
export interface GenerationKeys {
  /** Stream of delivered input, ids 0-(index+1); fields s (seqno), p (payload), t (trace). */
  input: string;
  /** Hash of appends buffered ahead of a gap: p:<seqno> → payload, t:<seqno> → trace. */
  buffered: string;
  /** Stream of output frames, ids 0-(index+1); fields f (frame), t (trace). */
  output: string;
  /** Hash: ok, code?, message?, details? (ErrorDetails bytes). Present once ended. */
  end: string;
  /** Fencing epoch (INCR by claim). */
  epoch: string;
  /** Run snapshot bytes. */
  snapshot: string;
}

export interface RequestKeys {
  /** The hash tag, braces included. */
  tag: string;
  /** `<prefix>:req:{t:r}`: not a key itself; scripts derive generation keys from it. */
  base: string;
  /** Hash: latest (generation), next (next expected seqno of latest), ended (0|1 of latest). */
  seq: string;
  /** Sorted set readerId → expiry (ms, Redis time). */
  readers: string;
  /** When the last live reader left (ms, Redis time). */
  left: string;
  /** Pub/sub channel of wake-ups: "i" (input), "o" (output, end, new generation), "r" (the last reader left). */
  channel: string;
  generation(n: number): GenerationKeys;
}

/** Builds every key of one request (see the layout in libs/bus/README.md). */
export function requestKeys(prefix: string, ref: RequestRef): RequestKeys {
  assertKeyPrefix(prefix, "bus key prefix");
  const tag = hashTag(ref.tenantId, ref.requestId);
  const base = `${prefix}:req:${tag}`;
  return {
    tag,
    base,
    seq: `${base}:seq`,
    readers: `${base}:readers`,
    left: `${base}:left`,
    channel: `${prefix}:wake:${tag}`,
    generation(n) {
      const g = `${base}:g${n}`;
      return {
        input: `${g}:in`,
        buffered: `${g}:buf`,
        output: `${g}:out`,
        end: `${g}:end`,
        epoch: `${g}:epoch`,
        snapshot: `${g}:snap`,
      };
    },
  };
}

/**
 * The bus's starts channel: a message (the request's hash tag) whenever a request's generation
 * starts, for readers waiting for a request to appear. One channel for the whole bus, so a
 * process subscribes it once however many readers wait (no brace: never a request's channel).
 */
export function startsChannel(prefix: string): string {
  assertKeyPrefix(prefix, "bus key prefix");
  return `${prefix}:wake:starts`;
}

/** Prefix of every wake channel of a bus (pattern-free: no glob characters are added). */
export function channelPrefix(prefix: string): string {
  return `${prefix}:wake:`;
}

/** The key naming a conversation's current run (its own slot: it is not a request key). */
export function conversationRunKey(prefix: string, tenantId: string, conversationId: string): string {
  assertKeyPrefix(prefix, "bus key prefix");
  return `${prefix}:conv:${hashTag(tenantId, conversationId)}:run`;
}

/** The key holding a conversation's shared prewarm. */
export function conversationPrewarmKey(prefix: string, tenantId: string, conversationId: string): string {
  assertKeyPrefix(prefix, "bus key prefix");
  return `${prefix}:conv:${hashTag(tenantId, conversationId)}:prewarm`;
}

/** The channel of a conversation's wake-ups: "c" when a run marked itself current or the prewarm was taken. */
export function conversationChannel(prefix: string, tenantId: string, conversationId: string): string {
  assertKeyPrefix(prefix, "bus key prefix");
  return `${prefix}:wake:conv:${hashTag(tenantId, conversationId)}`;
}
